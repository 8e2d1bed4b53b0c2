"""English, as data: the attributes people state of each other, of themselves and of the things they
work on, and the small words around them. Phrases and cues are plain words (stemmed when read). A
word that names two attributes ("job": an employer or a title; "home": a city or an address) is a
phrase of both: a key of it alone takes the one the text's cues point to, else the one the subject
already holds, else the first here (graph/keys.py). Written from how people talk about people and systems,
not from any benchmark's phrasing; a missing phrase makes a key its own attribute (never a wrong
merge), so widen these lists rather than loosen a threshold."""

from __future__ import annotations

from . import Attribute, Lexicon

# Values that say which attribute a note states: one names the car, the animal or the sport, not the
# attribute ("picked up a Citroen Berlingo second-hand.", "brought home a Maine Coon.", "signed up
# for a padel league."), as the package managers' names do below. Left out where a word is as often
# something else: "golf" (a VW Golf), "squash" (squash merges), "running" (running a migration),
# "mini", "seat", "boxer".
CAR_MAKES = ("toyota", "honda", "mazda", "peugeot", "citroen", "tesla", "volvo", "kia", "hyundai", "volkswagen", "vw",
             "subaru", "nissan", "skoda", "renault", "fiat", "ford", "bmw", "audi", "mercedes", "dacia", "opel",
             "jeep", "porsche", "lexus", "chevrolet")
PET_KINDS = ("tabby", "hamster", "rabbit", "parrot", "budgie", "cockatiel", "canary", "guinea pig", "chinchilla",
             "gerbil", "tortoise", "turtle", "lizard", "gecko", "goldfish", "ferret", "bearded dragon", "corn snake",
             "greyhound", "collie", "labrador", "retriever", "beagle", "spaniel", "terrier", "poodle", "dachshund",
             "husky", "maine coon", "siamese cat", "pony")
# Editors a note names instead of saying "editor" ("Switched to Helix last week."): cues of the editor.
# Tried at the fifty-ninth stop and not kept (another's note came first as often as they helped); since
# a question about the user reads whom the graph files a note about, they only helped (seventy-sixth stop).
EDITORS = ("vim", "neovim", "emacs", "vs code", "helix", "intellij", "zed", "sublime", "pycharm")
SPORTS = ("padel", "curling", "water polo", "table tennis", "tennis", "badminton", "bouldering", "climbing", "judo",
          "karate", "swimming", "rowing", "cycling", "kayaking", "trail running", "football", "basketball",
          "volleyball", "hockey", "rugby", "skiing", "surfing", "triathlon", "frisbee", "marathon", "pilates",
          "yoga", "crossfit", "archery")

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
# A thing moved to a day or a month is rescheduled, not relocated ("practice moved to Sundays at 9."):
# no home city's "moved to". Not "may", a verb too.
RESCHEDULED = tuple(f"moved to {when}" for when in (*WEEKDAYS, "tomorrow", "next week", "next month",
                                                      *(m for m in MONTHS if m != "may")))

ATTRIBUTES = (
    # where and how someone lives
    Attribute("home city", ("home city", "city", "town", "current city", "lives in", "living in", "where they live",
                            "where lives", "place of residence", "residence", "location", "based in", "based",
                            "home base", "city of residence", "home"),
              ("live", "city", "town", "reside", "based", "moved to", "relocated", "settled", "call home"),
              kind="fact", answers="place"),
    Attribute("home address", ("home address", "address", "street address", "apartment", "flat", "house", "home"),
              ("address", "apartment", "flat", "house"), kind="fact", answers="place"),
    Attribute("hometown", ("hometown", "home town", "grew up in", "where they grew up", "place of birth",
                           "birthplace", "born in", "origin"),
              ("hometown", "grew up", "grow up", "raised", "birthplace", "born in"), kind="fact", answers="place",
              settled=True),
    Attribute("birthday", ("birthday", "date of birth", "birth date", "born on", "dob"), ("birthday", "born on"),
              kind="fact", answers="time", settled=True),
    Attribute("partner", ("partner", "spouse", "wife", "husband", "girlfriend", "boyfriend", "significant other",
                          "married to", "dating", "fiance", "fiancee", "relationship", "in a relationship with",
                          "seeing"),
              ("partner", "spouse", "wife", "husband", "girlfriend", "boyfriend", "married", "dating",
               "relationship", "engaged", "going out with", "a couple", "broke up", "split up"), kind="fact",
              answers="person"),
    Attribute("phone number", ("phone number", "phone", "mobile", "mobile number", "cell", "cell number",
                               "telephone", "contact number", "number"), ("phone", "mobile", "cell", "telephone"),
              kind="fact"),
    # "phone" is a number or a handset: the text's cues decide, else the subject's facts, else a number.
    # ("device" is a phone or a laptop, so neither's: a new phone replaced a laptop keyed "device".)
    Attribute("phone", ("phone", "phone model", "mobile phone", "cell phone", "handset", "smartphone"),
              ("handset", "smartphone", "iphone", "android", "pixel", "galaxy"), named=True),
    Attribute("email", ("email", "email address", "e-mail", "mail"), ("email", "e-mail"), kind="fact"),
    Attribute("car", ("car", "vehicle", "drives", "what they drive", "auto", "automobile", "ride", "vehicle driven"),
              ("car", "drive", "vehicle", "leasing", *CAR_MAKES), kind="fact", named=True),
    Attribute("pets", ("pets", "pet", "animals", "dogs", "cats"),
              ("pet", "dog", "cat", "animal", "puppy", "kitten", *PET_KINDS), single=False, kind="fact"),
    Attribute("allergies", ("allergies", "allergy", "allergic to", "food allergies"), ("allergy", "allergic"),
              single=False, kind="fact"),
    # "language" is a program's (one at a time) unless the subject already has languages it speaks
    # (keys.Key.within): listed first, it is the one a subject with neither takes.
    Attribute("language", ("language", "programming language", "main language", "written in", "coded in",
                           "implementation language"), ("language", "written in", "coded in")),
    Attribute("languages spoken", ("languages", "languages spoken", "speaks", "spoken languages", "language"),
              ("speak",), single=False, kind="fact"),
    Attribute("hobbies", ("hobbies", "hobby", "pastimes", "interests"), ("hobby", "pastime"), single=False),
    Attribute("sport", ("sport", "sports", "exercise", "workout", "fitness", "training", "keeps fit with",
                        "how they keep fit", "athletic activity", "plays"),
              ("sport", "exercise", "workout", "fit", "training", "play", *SPORTS)),
    Attribute("alma mater", ("alma mater", "school", "university", "college", "studied at", "education",
                             "graduated from", "degree from", "where they studied"),
              ("studied", "school", "university", "college", "graduated", "alma mater", "degree"), kind="fact",
              answers="place", settled=True),
    Attribute("favourite food", ("favourite food", "favorite food", "cuisine", "favourite dish", "favorite dish"),
              ("food", "cuisine", "dish"), kind="preference"),
    # Without these two, the embedder read "favourite drink" as the favourite food and "gym" as the
    # sport, and a subject's drink replaced its food.
    Attribute("favourite drink", ("favourite drink", "favorite drink", "drink", "drink of choice", "usual drink",
                                  "coffee order", "beverage"), ("drink", "beverage"), kind="preference"),
    Attribute("gym", ("gym", "fitness club", "health club", "gym membership", "fitness centre", "fitness center"),
              ("gym",), kind="fact", answers="place"),
    # Without it "internet provider" was plainly a "hosting provider" (a deploy target) to the embedder.
    Attribute("internet provider", ("internet provider", "isp", "internet service provider", "broadband",
                                    "broadband provider", "internet"), ("broadband", "isp"), kind="fact"),
    # Who insures the car, the home, one's health. No phrase names the insured thing ("car insurance"):
    # its words would name no subject (whose.py), and "the car" of "Who insures the car?" is one.
    Attribute("insurer", ("insurer", "insurance", "insurance provider", "insurance company", "insured with",
                          "insured by", "insures", "who insures"),
              ("insurer", "insurance", "insured", "insures"), kind="fact"),
    # "energy" alone is as often someone's ("more energy after the run").
    Attribute("energy supplier", ("energy supplier", "energy provider", "energy company", "electricity supplier",
                                  "electricity provider", "gas supplier", "power company"),
              ("energy supplier", "electricity", "tariff"), kind="fact"),
    # work
    Attribute("employer", ("employer", "company", "works at", "works for", "workplace", "firm", "employed by",
                           "organisation", "organization", "where they work", "current employer", "job"),
              ("employer", "employs", "company", "firm", "organisation", "organization", "work at", "work for",
               "work", "job at", "role at", "position at", "startup"), kind="fact", answers="place"),
    Attribute("job title", ("job title", "title", "role", "position", "job role", "designation", "rank", "job",
                            "occupation", "for a living"),
              ("title", "role", "position", "promoted", "occupation", "for a living"), kind="fact"),
    Attribute("manager", ("manager", "boss", "reports to", "supervisor", "line manager", "who they report to",
                          "direct manager", "reporting line", "skip-level"),
              ("manager", "boss", "report to", "supervise", "supervisor", "in charge of"), kind="fact",
              answers="person"),
    Attribute("doctor", ("doctor", "gp", "physician", "family doctor"), ("doctor", "gp", "physician"), kind="fact",
              answers="person"),
    Attribute("dentist", ("dentist",), ("dentist",), kind="fact", answers="person"),
    Attribute("therapist", ("therapist", "counsellor", "counselor"), ("therapist", "counsellor", "counselor"),
              kind="fact", answers="person"),
    Attribute("team", ("team", "squad", "department", "group", "unit", "org", "belongs to", "member of"),
              ("team", "squad", "department"), kind="fact", named=True),
    Attribute("team lead", ("team lead", "lead", "tech lead", "leader", "led by"), ("lead", "leads"), kind="fact",
              answers="person"),
    Attribute("project", ("project", "working on", "current project", "assignment", "workstream", "initiative",
                          "focus", "owns"),
              ("project", "working on", "assigned", "reassigned", "workstream", "initiative"),
              named=True),
    # "based in" and "location" name a person's city or a team's office: the subject's facts decide.
    # A company's headquarters is its office ("hq city": its place, by `value_words`).
    Attribute("office", ("office", "office location", "site", "desk", "building", "works from", "based in",
                         "based", "location", "headquarters", "headquartered in", "head office", "hq"),
              ("office", "desk", "site", "building", "work from", "based", "headquarters", "headquartered"),
              kind="fact", answers="place"),
    Attribute("start year", ("start year", "started", "start date", "joined in", "since", "year joined",
                             "year started"), ("start", "joined"), kind="fact", answers="time", settled=True),
    Attribute("time zone", ("time zone", "timezone", "tz", "local time"), ("time zone", "timezone"), kind="fact"),
    Attribute("on-call", ("on-call", "on call", "oncall", "on-call day", "on-call rotation", "on-call shift",
                          "pager duty", "on call day"), ("on-call", "on call", "oncall", "pager")),
    Attribute("laptop", ("laptop", "computer", "machine", "notebook", "work laptop", "work machine"),
              ("laptop", "computer", "machine", "notebook"), named=True),
    Attribute("editor", ("editor", "text editor", "code editor", "ide", "favourite editor", "favorite editor"),
              ("editor", "ide", *EDITORS), kind="preference"),
    Attribute("shell", ("shell", "default shell", "terminal shell", "command line shell", "command-line shell"),
              ("shell",), kind="preference"),
    # Its values are few and well known, and a note names the one in use, not the attribute ("Lockfile is
    # from pnpm."): the embedder could not tell such a note from the user's other tools. The shells' and
    # laptops' names were tried the same way and are not here: they put another person's ("Priya is selling
    # her ThinkPad T14.") first about as often as they helped (docs/benchmarks.md, fifty-ninth stop); the
    # editors' are, since the seventy-sixth stop (EDITORS).
    Attribute("package manager", ("package manager", "js package manager", "dependency manager",
                                  "node package manager", "package tool"),
              ("package", "npm", "pnpm", "yarn", "bun", "deno", "pip", "conda", "homebrew")),
    # A test is also an exam, so "test" (and "tests", the same stem) names the framework only as a
    # key, never as a cue in a text or a question.
    Attribute("test framework", ("test framework", "testing framework", "test runner", "test library",
                                 "testing library", "tests", "testing"),
              ("test framework", "testing framework", "test runner", "pytest", "unittest", "vitest", "junit",
               "rspec")),
    # A formatter and a linter are named more often than said ("now uses ruff instead of black"); ruff
    # and biome are both. "black" is left out: a colour as often.
    Attribute("formatter", ("formatter", "code formatter", "formatting", "autoformatter", "auto-formatter"),
              ("formatter", "formatting", "prettier", "gofmt", "rustfmt", "yapf", "autopep8", "clang-format",
               "ruff", "biome")),
    Attribute("linter", ("linter", "linting", "lint tool", "static analysis"),
              ("linter", "linting", "eslint", "flake8", "pylint", "ruff", "biome", "rubocop", "clippy",
               "golangci-lint")),
    Attribute("notes app", ("notes app", "note app", "note-taking app", "note taking app", "note-taking",
                            "note taking", "notes tool", "note-taking tool"),
              ("note-taking", "note taking", "notes app", "evernote", "onenote"), kind="preference"),
    # Where a team's or a person's secrets are kept, named by the tool more often than said.
    Attribute("secrets manager", ("secrets manager", "secret manager", "secrets store", "secret store",
                                  "password manager", "where secrets live", "secrets storage", "vault"),
              ("secrets", "secrets manager", "password manager", "vault", "1password", "bitwarden", "lastpass",
               "doppler", "keepass")),
    # systems and teams
    Attribute("deploy target", ("deploy target", "deployment target", "hosting", "host", "hosted on", "deployed to",
                                "deploys to", "platform", "runs on", "where it runs", "hosting provider"),
              ("deploy", "deployed", "host", "hosted", "runs on"), answers="place"),
    # A CI system's name says the note states it ("Moved CI to Buildkite" does by "CI" too).
    Attribute("ci", ("ci", "ci system", "ci provider", "ci service", "ci pipeline", "continuous integration",
                     "build system"),
              ("ci", "continuous integration", "buildkite", "github actions", "circleci", "jenkins", "travis ci",
               "gitlab ci", "teamcity")),
    Attribute("region", ("region", "cloud region", "aws region", "datacenter", "data center", "data centre"),
              ("region", "datacenter", "data center"), answers="place"),
    Attribute("owner", ("owner", "maintainer", "owned by", "maintained by", "responsible", "point person", "dri",
                        "who owns it", "point of contact", "contact person"),
              ("owner", "owns", "ownership", "maintainer", "maintains", "responsible"), answers="person"),
    Attribute("standup time", ("standup time", "standup", "stand-up", "daily standup", "standup meeting",
                               "stand-up time", "daily sync", "daily meeting", "huddle", "huddle time",
                               "daily huddle", "meets daily at"), ("standup", "stand-up", "sync"), answers="time"),
    Attribute("channel", ("channel", "slack channel", "chat channel", "slack", "chat room", "chats in",
                          "where to ask questions"), ("channel", "slack"),
              answers="place"),
    Attribute("sprint length", ("sprint length", "sprint", "sprint duration", "iteration length", "sprint cadence"),
              ("sprint", "iteration")),
    Attribute("version", ("version", "postgres version", "database version", "release"), ("version", "release"),
              numbered=True),
    # "backing store" was a shop's store by its head word.
    Attribute("database", ("database", "db", "datastore", "data store", "persists to", "backing store",
                           "stores data in"), ("database", "datastore")),
    Attribute("rate limit", ("rate limit", "limit", "quota", "throttle", "requests per minute"),
              ("limit", "quota", "throttle")),
    Attribute("license", ("license", "licence", "licensing", "licensed under"), ("license", "licence", "licensed")),
    Attribute("founded", ("founded", "founding year", "year founded", "established", "founded in"),
              ("founded", "established"), answers="time", settled=True),
    Attribute("store", ("store", "shop", "grocery store", "supermarket", "where they shop", "shops at"),
              ("store", "shop", "grocery", "supermarket"), answers="place"),
)

ENGLISH = Lexicon(
    language="english",
    text_search="english",
    key_fillers=frozenset("""a an the their his her its my our your current present new latest main usual choice
        preferred primary default of is are was were what who whom which they he she it them one person's""".split()),
    stop_words=frozenset("""a an the and or but if of to in on at by for with about as from into over after
        before is are was were be been being do does did has have had what which who whom whose where when why
        how this that these those there here it its they them their he him his she her i me my we us our you
        your any some all tell me please now currently still these days moment right at present can could
        would should will shall may might must""".split()),
    user_names=frozenset({"me", "i", "myself", "the user", "user", "the user's", "my", "you", "yourself"}),
    attributes=ATTRIBUTES,
    whole_words=frozenset({"dating", "seeing", "building", "training", "designation", "secrets"}),
    idioms=("at home", "brought home", "bring home", "brings home", "came home", "come home", "got home",
            "went home", "go home", "home from", *RESCHEDULED),
    past_qualifiers=frozenset({"previous", "former", "old", "ex", "prior", "past", "earlier", "one-time"}),
    value_words=frozenset({"name", "city", "location", "model", "brand", "make", "type", "kind"}),
    question_words={"who": "person", "whom": "person", "who's": "person", "who’s": "person", "where": "place",
                    "where's": "place", "where’s": "place", "when": "time", "when's": "time", "when’s": "time"},
    question_determiners=frozenset({"which", "what"}),
    ended=("no longer", "not anymore", "not any more", "stopped", "quit", "gave up", "ended", "is over",
           "grew out of", "outgrew", "got rid of", "gave away", "sold"),
    # Capitalised words that are not names: question words and the like at the start of a clause, and
    # titles ("My doctor Dr. Smith": Smith).
    not_names=frozenset("""a an the i i'm i've i'd what which who whom whose where when why how is are was were
        do does did can could should would will shall may might has have had please tell show list find give
        any anyone anything some my our your their his her its this that these those there here and or but if
        in on at of for to from with by about as it we you they he she me us them
        monday tuesday wednesday thursday friday saturday sunday january february march april may june july
        august september october november december mondays tuesdays wednesdays thursdays fridays saturdays sundays
        everything everyone everybody nothing nobody something someone somebody
        dr mr mrs ms prof
        after before during since until till although though because unless whereas whether while whilst once
        around between among besides despite except unlike upon toward towards via per throughout amid according
        based considering regarding concerning following including also then so yet nor however meanwhile
        therefore thus anyway instead otherwise today yesterday tomorrow tonight recently lately soon later earlier
        already finally eventually maybe perhaps probably actually apparently yes no not""".split()),
    prepositions=frozenset("""in on at of for to from with by about after before during since until around
        between among besides despite except unlike upon toward towards via per throughout amid into onto over
        under across along behind beyond within without near through against following according regarding
        concerning considering""".split()),
    opening_verbs=frozenset("""prefers prefer uses use likes loves hates dislikes enjoys wants needs works lives
        drives owns speaks plays reads writes codes runs deploys switched moved started stopped joined left bought
        sold quit avoids avoid keeps booked changed landed finished shipped fixed merged migrated upgraded renewed
        cancelled canceled visited tried adopted signed picked dropped ordered paid called emailed went got met
        took spent bumped replaced swapped added removed deployed released pinned reverted downgraded installed
        uninstalled enabled disabled renamed rewrote deleted archived rolled""".split()),
    name_keys=("name", "first name", "full name", "given name", "real name", "nickname", "goes by"),
    subject_verbs=frozenset("""is was has had will would can could does did should must might may isn't wasn't
        hasn't doesn't didn't won't can't took went left got became bought met said told made ran came began
        kept found gave sold won lost wrote drove flew grew knew saw thought brought built spent sent felt held
        led paid put read quit sat stood taught wore broke chose forgot hired fell""".split()),
    subject_verb_endings=("s", "ed"),
    subject_joiners=("and", "&"),
    verb_adverbs=frozenset("""just also finally recently still already never always often now soon then suddenly
        eventually officially apparently actually really only even quietly""".split()),
    user_words=("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're", "we've", "our",
                "ours", "ourselves", "the user", "user"),
    user_words_lower=("us",),
    classifiers=frozenset({"team", "squad", "crew", "project"}),
    agent_labels=("assistant", "agent", "ai", "bot", "claude", "model", "system", "tool"),
    user_possessives=("my", "our", "the user's", "user's"),
    possessive_endings=("'s", "’s"),
    articles=("the", "a", "an"),
    with_user=("and i", "and me", "and we", "and the user", "and user"),
    # Not here: "manager", "boss", "lead" ("My boss is Ahmed Saleh" is the user's own fact: they are
    # `leaders`), nor a doctor, dentist or therapist, whom one sees one at a time ("Changed dentists,
    # Dr. Koller from now on." is the user's news too), and "team" (an agent's "the team" is the user's).
    people=(
        # family and home
        "friend", "best friend", "neighbour", "neighbor", "partner", "wife", "husband", "spouse", "fiancé",
        "fiancée", "fiance", "fiancee", "girlfriend", "boyfriend", "ex", "son", "daughter", "kid", "child",
        "children", "baby", "mother", "mom", "mum", "father", "dad", "parent", "brother", "sister", "sibling",
        "twin", "cousin", "uncle", "aunt", "nephew", "niece", "grandmother", "grandma", "grandfather", "grandpa",
        "grandparent", "in-law", "family", "roommate", "flatmate", "housemate", "landlord", "landlady",
        # work and school
        "colleague", "coworker", "co-worker", "teammate", "classmate", "cofounder", "co-founder", "founder",
        "designer", "engineer", "developer", "intern", "contractor", "consultant", "client", "customer", "mentor",
        "mentee", "student", "teacher", "coach", "assistant", "direct report", "new hire",
        "recruiter", "investor", "vendor", "accountant", "lawyer",
    ),
    leaders=("manager", "line manager", "boss", "lead", "team lead", "tech lead", "supervisor", "doctor", "dentist",
             "therapist"),
    naming_leaders=("is", "was", "are", "were", "'s", "’s", "has been", "had been", "will be", "became",
                    "changed to", "switched to", "moved to", "is called", "was called", "is named", "goes by"),
    third_persons=("she", "her", "hers", "herself", "he", "him", "his", "himself"),
    third_person_subjects=("she", "he"),
    kin_names=("mom", "mum", "mommy", "mummy", "mama", "dad", "daddy", "papa", "grandma", "grandpa", "granny",
               "nana", "grandad", "granddad"),
    present=("now", "right now", "currently", "these days", "at the moment", "nowadays", "at present",
             "presently", "latest", "most recent", "still", "anymore", "any more", "as of today", "today",
             "up to date", "so far"),
    past=("used to", "before", "previously", "originally", "formerly", "in the past", "back then", "at first",
          "at the time", "in those days", "last year", "years ago", "earlier", "initially", "prior"),
    past_auxiliaries=frozenset({"did", "was", "were", "had"}),
    months={m: n for n, m in enumerate(MONTHS, start=1)},
    month_abbreviations={**{m: n for n, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(),
                                                        start=1)}, "sept": 9},
    date_bounds={"before": "before", "prior to": "before", "until": "until", "till": "until", "by": "until",
                 "after": "after", "since": "since"},
    date_leads=("in", "on", "during", "of", "around", "throughout", "early", "late", "mid", "mid-", "back in",
                "back on"),
    month_leads=("in", "during", "throughout", "early", "late", "mid", "mid-", "last", "this", "of", "back in"),
    day_suffixes=("st", "nd", "rd", "th"),
    day_month_joiners=("of",),
    days_from_today={"yesterday": -1, "tomorrow": 1},
    weekdays={d: n for n, d in enumerate(WEEKDAYS)},
    time_units={"day": "day", "days": "day", "week": "week", "weeks": "week", "month": "month", "months": "month",
                "year": "year", "years": "year"},
    counts={"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12},
    ago_after=("ago",),
    last_before=("last",),
    next_before=("next",),
    greetings=("hey", "hi", "hello", "thanks", "dear", "bye"),
    # Irregular verbs, but for the auxiliaries (stop words), those with a form that is a common word of
    # another meaning (rose, ground, wound, bound, lay; "a bit", "the fall") and those so common they
    # say little of what happened (go, get, make, take, come, give, say, see, know, think, tell, find,
    # feel, leave, keep, hold, bring, show, hear, mean): in a small store "went" is as rare as any word,
    # and "Where did Ana go on holiday?" had "Ana went to the dentist in May." first.
    word_forms=tuple(group.strip() for group in """
        arise arose arisen|awake awoke awoken|bear bore borne|beat beaten|become became|begin began begun|bend bent
        |bleed bled|blow blew blown|break broke broken|breed bred|build built|burn burnt|buy bought|catch caught
        |choose chose chosen|cling clung|creep crept|deal dealt|dig dug|draw drew drawn|dream dreamt
        |drink drank drunk|drive drove driven|eat ate eaten|feed fed|fight fought|flee fled|fly flew flown
        |forbid forbade forbidden|forget forgot forgotten|forgive forgave forgiven|freeze froze frozen
        |grow grew grown|hang hung|hide hid hidden|kneel knelt|lead led|lean leant|leap leapt|learn learnt|lend lent
        |light lit|lose lost|meet met|pay paid|ride rode ridden|ring rang rung|run ran|seek sought|sell sold
        |send sent|sew sewn|shake shook shaken|shine shone|shoot shot|shrink shrank shrunk|sing sang sung
        |sink sank sunk|sit sat|sleep slept|slide slid|speak spoke spoken|speed sped|spend spent|spin spun
        |spring sprang sprung|stand stood|steal stole stolen|stick stuck|sting stung|stink stank stunk|strike struck
        |swear swore sworn|sweep swept|swim swam swum|swing swung|teach taught|tear tore torn|throw threw thrown
        |understand understood|wake woke woken|wear wore worn|weave wove woven|weep wept|win won|write wrote written
        """.split("|")),
    note_openers=frozenset("""user user's fyi note notes update after before since now today yesterday moved
        switched from standup also just new prod heard congrats""".split()),
    not_owners=frozenset({"let"}),
    number_words=frozenset("""one two three four five six seven eight nine ten eleven twelve twenty thirty forty
        fifty hundred thousand half twice first second third fourth fifth last next""".split()),
    determiners=("the", "a", "an", "our", "its", "their", "this", "that"),
    verb_endings=("s", "ed", "ing"),
    prompt_stop_words=frozenset("""about after again also been before being could does doing done each even ever
        every from have here into just know like made make many more most much must need only other over please
        really should some still such tell than thank thanks that their them then there these they thing things
        think this those want were what when where which while will with would your yours""".split()),
)

LEXICON = ENGLISH
