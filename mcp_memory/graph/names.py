"""Who a text names, by rules: runs of capitalised words (a person, a company, a tool, a place) and
the user it speaks of. The one place these rules live; the query's subject (retrieval/query.py),
the guard's and the versions' subjects read the same patterns."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import replace

from ..lexicon import Lexicon
from ..lexicon.english import ENGLISH
from .about_user import led_by_their_person, named_beside_their_person, speaks_of_user
from .name_forms import POSSESSIVE, Name, canonical, classified, first_name

# Capitalised words that are not names (the lexicon's `not_names`): English's, for the readers that
# are given no lexicon.
NOT_NAMES = ENGLISH.not_names
# A dot inside a name goes on with it where a word in lower case or an acronym follows with no space
# ("Fly.io", "Node.js", "Socket.IO"); a capitalised word after a dot starts a sentence ("Lisbon.Then").
_DOTTED = r"\.(?=[a-z]|[A-Z]{2,}\b)"
_NAME = re.compile(r"(?<![\w'])([A-Z][\w]*(?:(?:[-'][A-Z]?|" + _DOTTED + r")[\w]+)*)")
# A run of capitalised words ("Greta Ibarra", "Remind Greta Ibarra"), and a subject comes early in a
# memory: within its first SUBJECT_WITHIN words.
_RUN_WORD = r"[A-Z][\w'-]*(?:" + _DOTTED + r"[\w'-]+)*"
RUN = re.compile(r"(?<![\w'-])" + _RUN_WORD + r"(?:\s+" + _RUN_WORD + ")*")
SUBJECT_WITHIN = 5
# A word as the name rules count words (a possessive and a hyphenated word one word each).
WORD = re.compile(r"\w[\w'-]*")
# A possessive ends a name: "Adaeze Halvorsen's ThinkPad T14" is "Adaeze Halvorsen's", then "ThinkPad T14".
_POSSESSIVE_END = re.compile(r"\S.*?(?:'s(?=\s)|$)", re.DOTALL)
# Where a clause starts: the text's start, or after a sentence's end or a label's colon or dash.
_CLAUSE_START = re.compile(r"(?:^|[.!?:;]\s+|\s-\s+|\n)\W*$")
# Names are read from this much of a text: no real memory names its subject later, and a hostile
# text of thousands of capitalised words costs no more than this.
NAMES_WITHIN_CHARS = 2000
USER = "(user)"  # the canonical name of the user's own entity
USER_NAME = "the user"  # its name as shown, and as a writer or a model may say it


def entity_name(kind: str, name: str) -> str:
    """How an entity of `kind` named `name` is shown: the user's own as USER_NAME."""
    return USER_NAME if kind == "user" else name


def subject_of(text: str, lexicon: Lexicon = ENGLISH) -> tuple[str, ...]:
    """The proper names a question is about: capitalised words other than question words and
    calendar names, possessives cut ("Gaia's" -> "Gaia"). Empty when it names nobody."""
    names = []
    for match in _NAME.finditer(text):
        word = re.sub(r"'s$", "", match.group(1))
        if word.lower() not in lexicon.not_names and len(word) > 1 and word not in names:
            names.append(word)
    return tuple(names)


def full_names_of(text: str, lexicon: Lexicon = ENGLISH) -> tuple[tuple[str, ...], ...]:
    """The runs of two or more adjacent names in a question ("Benedikt Pereira's project" ->
    ("Benedikt", "Pereira")): a person named in full, whom a memory may call by the first alone."""
    runs: list[tuple[str, ...]] = []
    run: list[str] = []
    end = -1
    for match in _NAME.finditer(text):
        word = re.sub(r"'s$", "", match.group(1))
        name = word.lower() not in lexicon.not_names and len(word) > 1
        adjacent = name and run and not text[end:match.start()].strip() and not text[end - 2:end] == "'s"
        if not adjacent:
            if len(run) > 1:
                runs.append(tuple(run))
            run = []
        if name:
            run.append(word)
        end = match.end()
    if len(run) > 1:
        runs.append(tuple(run))
    return tuple(runs)


_JOINED = re.compile(r"\w[-_]\w")


def slugs(text: str, lexicon: Lexicon = ENGLISH) -> list[str]:
    """The words of `text` in lower case that join words by a hyphen or underscore, as written,
    possessives cut, each once: a thing named as a slug ("billing-service", "feeds_api") is a name of
    several words in one; so is "on-call", which only a known entity of that name makes one."""
    words = (POSSESSIVE.sub("", w) for w in WORD.findall(text) if w[0].islower())
    return list(dict.fromkeys(w for w in words if _JOINED.search(w) and w.lower() not in lexicon.not_names))


def runs(text: str) -> Iterator[tuple[int, str]]:
    """The runs of capitalised words in `text`, each with where it starts, cut after possessives."""
    for m in RUN.finditer(text):
        for run in _POSSESSIVE_END.finditer(m.group()):
            yield m.start() + run.start(), run.group()


def owned(text: str, lexicon: Lexicon = ENGLISH) -> Iterator[tuple[str, int]]:
    """Each run of capitalised words that owns what follows it by one of the lexicon's
    `possessive_endings` ("Leopold Kuznetsov's skip-level", "Tomás’s manager", "Mom's birthday"):
    the name as written, its ending cut, and where the text after the possessive starts. The one
    reader of a named owner, for the guard's owners and extraction's possessor; read off `runs` in
    one pass, so a hostile text costs what its length does."""
    ends = lexicon.possessive_endings
    for start, run in runs(text):
        end = start + len(run)
        ending = next((e for e in ends if run.endswith(e)), None)
        if ending is not None:  # "Halvorsen's": the run holds a straight apostrophe
            yield run[:-len(ending)], end
        elif (ending := next((e for e in ends if text.startswith(e, end)), None)) is not None:
            yield run, end + len(ending)  # "Tomás’s": a curly one ends the run before it


def names_in(text: str, lexicon: Lexicon = ENGLISH) -> list[Name]:
    """What `text` names, its subject first with role 'about': the user when it speaks of them with
    no one named before (and not of someone in their life), else its first name among its first
    words; every other name 'mentioned'. Each thing once."""
    text = text[:NAMES_WITHIN_CHARS]
    early = [m.end() for m in itertools.islice(WORD.finditer(text[:400]), SUBJECT_WITHIN)]
    early_end = early[-1] if len(early) == SUBJECT_WITHIN else len(text) + 1
    found: dict[str, Name] = {}
    # "My sister lives in Porto" is about the user's sister, whom it does not name: no name is its
    # subject. "Lena, the user's sister, lives in Berlin" and "My sister Lena lives in Berlin" name
    # her: that name is, however short.
    apposed, role_named = named_beside_their_person(text, lexicon) or (None, False)
    led = led_by_their_person(text, lexicon) or role_named
    subject_taken = led and not role_named
    joined: int | None = None  # where a name conjoined with the opening one starts
    for start, run in runs(text):
        # A greeting opening the run greets the name after it ("Hey Mel", "Thanks Greta"): no name itself.
        greeting = _FIRST_WORD.match(run)
        if greeting is not None and greeting.group(1).lower() in lexicon.greetings:
            start, run = start + greeting.end(), run[greeting.end():]
        elif run.lower() in lexicon.greetings:
            continue
        # An agent's note with its subject unsaid opens on its verb ("Prefers Helix as the editor.",
        # "Works at Globex now."): the verb is no name, and no name after it is the subject.
        opening = _FIRST_WORD.match(run)
        first = (opening.group(1) if opening else run).lower()
        if first in lexicon.opening_verbs and opens_clause(text, start):
            subject_taken = True
            if opening is None:
                continue
            start, run = start + opening.end(), run[opening.end():]
        elif first in lexicon.verb_adverbs and opens_clause(text, start):
            # Nor an adverb: "Just landed in Lisbon." opens on one, its subject unsaid as well (a word in
            # lower case follows it, not an article: "Já cheguei a Lisboa."), "Finally Ana moved" and
            # "Finalmente a Ana mudou-se" before the subject.
            if opening is None:
                after = _NEXT_WORD.match(text, start + len(run))
                subject_taken = subject_taken or (after is not None and after.group(1) not in lexicon.articles)
                continue
            start, run = start + opening.end(), run[opening.end():]
        words = [POSSESSIVE.sub("", w) for w in run.split()]
        object_of = object_of_opening(words, text, start, lexicon)
        # The words for the user are no one's name ("User's son Theo ...").
        words = [w for w in words if w.lower() not in lexicon.not_names and w.lower() not in lexicon.user_words
                 and len(w) > 1]
        if not words:
            continue
        display = " ".join(words)
        key = canonical(display)
        if subject_taken and key in found:  # named before, and the subject known: nothing to add
            continue
        second = (conjoined_with(text, start + len(run), lexicon)
                  if not subject_taken and not object_of and start != apposed and opens_clause(text, start) else None)
        joined = second if second is not None else joined
        lone_opener = (len(words) == 1 and not run.endswith("'s") and start != apposed and second is None
                       and opens_clause(text, start) and not after_title(text, start, lexicon)
                       and not verb_follows(text, start + len(run), lexicon))
        if start == joined or second is not None:  # "Ana and Rui moved": both are whom it is about
            is_subject, sure = True, True
        elif lone_opener:  # sure only when spoken to, and no subject either way
            is_subject, sure = False, addressed(text, start, start + len(run), lexicon)
        else:
            # Between commas after their role ("My manager, Tom Hale, approved it") a name is apposed, not spoken to.
            is_subject = (not subject_taken and not object_of and start < early_end
                          and (start == apposed or not addressed(text, start, start + len(run), lexicon)))
            sure = True
        if key not in found:
            found[key] = Name(display, key, "about" if is_subject else "mentioned", sure=sure)
        subject_taken = subject_taken or is_subject
    # A thing named as a slug ("Upgraded billing-service's database"): mentioned, where it is known.
    names = list(found.values()) + [Name(slug, key, "mentioned", sure=False) for slug in slugs(text, lexicon)
                                    if (key := canonical(slug)) not in found]
    if speaks_of_user(text, lexicon) and not led:
        first = names[0] if names and names[0].role == "about" else None
        user_first = first is None or _user_before(text, first.display, lexicon)
        if user_first:
            names = [mentioned(n) for n in names]
        names.insert(0, Name(USER_NAME, USER, "about" if user_first else "mentioned", user=True))
    return names


# How many lower-case words may stand between a subject joiner and the second name ("Clara and her
# husband Rui adopted a dog").
JOINED_WITHIN = 3


@functools.lru_cache(maxsize=8)
def _joined(lexicon: Lexicon) -> re.Pattern[str]:
    if not lexicon.subject_joiners:
        return re.compile(r"(?!)")
    joiners = "|".join(re.escape(j) for j in lexicon.subject_joiners)
    return re.compile(r"\s+(?:" + joiners + r")\s+(?:[a-z][\w'-]*\s+){0," + str(JOINED_WITHIN) + "}")


def conjoined_with(text: str, end: int, lexicon: Lexicon = ENGLISH) -> int | None:
    """Where the name joined to the one ending at `end` starts, where the two are one verb's subjects
    ("Ana and Rui moved to Porto", "Clara and her husband Rui adopted a dog": one of the lexicon's
    `subject_joiners`, a few words in lower case, then a name a verb follows); None otherwise ("Lunch
    and learn on Friday", "Ana and I moved": the user is no name)."""
    joiner = _joined(lexicon).match(text, end)
    second = RUN.match(text, joiner.end()) if joiner else None
    if second is None or second.group().split()[0].lower() in lexicon.user_words:
        return None
    return second.start() if verb_follows(text, second.end(), lexicon) else None


def object_of_opening(words: list[str], text: str, start: int, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a run of capitalised `words` at `start` names the object of the preposition opening
    its sentence ("After Quebec City, Odalys ..."), not the sentence's subject; a name after that
    object is none ("Since March Ana Lima lives ...")."""
    return (len(words) > 1 and words[0].lower() in lexicon.prepositions and words[1].lower() not in lexicon.not_names
            and opens_clause(text, start))


_TITLE_BEFORE = re.compile(r"(?<![\w'-])([A-Z][a-z]{1,4})\.\s+$")


def after_title(text: str, start: int, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether the name at `start` follows a title's abbreviation ("Dr. Weber", "Dra. Koller": one
    of the lexicon's `not_names`), whose full stop ends no sentence."""
    title = _TITLE_BEFORE.search(text, max(0, start - 8), start)
    return title is not None and title.group(1).lower() in lexicon.not_names


def opens_clause(text: str, start: int) -> bool:
    """Whether text[start:] opens a clause (`_CLAUSE_START` ends right before it). Every character
    the pattern can match is a non-word one, so it is looked for in the non-word characters just
    before `start` alone, not in the whole text before it: a text of many names paid for its length
    once per name."""
    at = start
    while at > 0 and not (text[at - 1].isalnum() or text[at - 1] == "_"):
        at -= 1
    return _CLAUSE_START.search(text, at, start) is not None


# How many of the lexicon's `verb_adverbs` may stand between a name and its verb ("Ana has just
# finally moved" reads "has" first).
ADVERBS_BEFORE_VERB = 2
_NEXT_WORD = re.compile(r"\s+([a-z][\w'-]*)(?![\w'-]|:)")


def verb_follows(text: str, end: int, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a verb follows the name ending at `end`: one of the lexicon's `subject_verbs` ("Alice
    is", "Diego took"), or a word ending as its `subject_verb_endings` say that is no other of its
    words ("Alice lives", "Bob moved"; not "Lunch this Friday"); a label's word ("Sprint goals:")
    and an owner ("Upgraded billing-service's database") are none. A sentence's capitalised opening
    word is its subject then, sure to be a name."""
    m = _NEXT_WORD.match(text, end)
    for _ in range(ADVERBS_BEFORE_VERB):  # "Oskar just settled in Lisbon"
        if m is None or m.group(1) not in lexicon.verb_adverbs:
            break
        m = _NEXT_WORD.match(text, m.end())
    if m is None:
        return False
    word = m.group(1)
    return word in lexicon.subject_verbs or (
        len(word) > 3 and word.endswith(lexicon.subject_verb_endings) and word not in lexicon.not_names
        and word not in lexicon.stop_words and not word.endswith(lexicon.possessive_endings))


def addressed(text: str, start: int, end: int, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether the name at text[start:end] is spoken to rather than of: after a greeting ("Hey Mel,",
    "Thanks Greta"), before "!" or "?" ("How are you, Mel?"), or set off by commas ("Wow, Mel, ...").
    "Anna, Mel and I" and "I met Mel, who ..." still speak of them. A text that only addresses
    someone is its writer's, not about them."""
    before, after = text[max(0, start - 2):start], text[end:end + 40].lstrip()
    if before == ", ":
        return after[:1] in (",", ".", "!", "?")
    greeted = re.search(r"(\w+)\s$", text[max(0, start - 20):start])
    return after[:1] in ("!", "?") or (greeted is not None and greeted.group(1).lower() in lexicon.greetings)


_FIRST_WORD = re.compile(r"(\w+)\s+(?=\S)")  # a greeting ("Hey Mel") or a verb ("Prefers Helix") opening a run
_SPEAKER = re.compile(r"^\s*([A-Z][\w'-]*(?:\s[A-Z][\w'-]*)?):\s+(?=\S)")


def turn_names(text: str, lexicon: Lexicon = ENGLISH) -> list[Name]:
    """What a conversation turn ("Caroline: I went to a support group") names: its speaker says
    "I", so a named speaker is what the turn is about, not the user; a turn of the user's own
    ("User: I moved to Lisbon") or of the agent's reads as any text does."""
    speaker = _SPEAKER.match(text)
    label = speaker.group(1) if speaker else ""
    if not speaker or label.lower() in lexicon.user_words:
        return names_in(text, lexicon)
    spoken = [n for n in names_in(text[speaker.end():], lexicon) if not n.user]
    if label.lower() in lexicon.agent_labels:
        return [mentioned(n) for n in spoken]
    said_by = Name(label, canonical(label), "about")
    return [said_by] + [mentioned(n) for n in spoken if n.canonical != said_by.canonical]


def mentioned(name: Name) -> Name:
    """`name` as one the text only mentions."""
    return name if name.role == "mentioned" else replace(name, role="mentioned")


def read_names(text: str, kind: str, lexicon: Lexicon = ENGLISH) -> list[Name]:
    """What a memory of `kind` names, by rules: the one reading every write and update goes by."""
    return one_each(classified(turn_names(text, lexicon) if kind == "episode" else names_in(text, lexicon),
                               lexicon))


def one_each(names: list[Name]) -> list[Name]:
    """`names` with a thing named twice, with and without its classifier ("Team Dotterel ...
    Dotterel's"), once: as first named, taking `about` if either had it."""
    out: list[Name] = []
    for n in names:
        same = next((i for i, o in enumerate(out) if n.canonical in o.forms or o.canonical in n.forms), None)
        if same is None:
            out.append(n)
        elif n.role == "about":
            out[same] = replace(out[same], role="about")
    return out


def _user_before(text: str, display: str, lexicon: Lexicon) -> bool:
    """Whether the text speaks of the user before it names `display` ("I told Greta ..." is the
    user's; "Greta laughed at my pun" is Greta's)."""
    at = text.find(display.split()[0])
    return at < 0 or speaks_of_user(text[:at], lexicon)


def writer_names(about: list[str], user_names: frozenset[str]) -> list[Name]:
    """The writer's `about`, each a name it is sure of ('me' and the like: the user)."""
    found: dict[str, Name] = {}
    for name in about:
        display = " ".join(name.split())
        if display.lower() in user_names:
            found.setdefault(USER, Name(USER_NAME, USER, "about", user=True, given=True))
        elif display:
            found.setdefault(canonical(display), Name(display, canonical(display), "about", given=True))
    return list(found.values())


def with_text(given: list[Name], read: list[Name]) -> list[Name]:
    """The writer's names and those the text holds, each thing once: a first name the writer gave
    is the full name the text holds when one alone begins with it ("Greta" in "Greta Ibarra moved
    to Oslo"); with names given, the text's others are only mentioned."""
    firsts = [(first, n) for n in read if (first := first_name(n.display)) is not None]
    names = []
    for n in given:
        full = None
        if n.lone:
            beginning = [r for first, r in firsts if first == n.canonical]
            full = beginning[0] if len(beginning) == 1 else None
        # Or the text's name of it with a classifier ("Dotterel" given, "Team Dotterel" read): the longer.
        kin = [r for r in read if n.canonical in r.forms or r.canonical in n.forms]
        if full is None and len(kin) == 1 and len(kin[0].canonical.split()) > len(n.canonical.split()):
            full = kin[0]
        names.append(replace(n, display=full.display, canonical=full.canonical, forms=full.forms)
                     if full is not None else n)
    taken = {c for n in names for c in (n.canonical, *n.forms)}
    return names + [n if not names else mentioned(n) for n in read
                    if n.canonical not in taken and not taken & set(n.forms)]


def bounded(names: list[Name], most: int) -> list[Name]:
    """What one memory adds to the graph, at most `most` names: those the writer gave and its
    subject always, then the other names its text holds, in order, while there is room. A pasted
    list of thousands of capitalised names would otherwise make as many entities in one write."""
    kept = sum(1 for n in names if n.given or n.role == "about")
    room = max(0, most - kept)
    out = []
    for n in names:
        if n.given or n.role == "about":
            out.append(n)
        elif room:
            out.append(n)
            room -= 1
    return out
