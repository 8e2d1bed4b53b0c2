"""Whose memories a question asks about, among the best results: the names it names, the user an
agent works for, someone in the user's life, or the run of its words the results share; and how to
take that subject out of a text, so what is left is what is said of them (retrieval/focus.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import partial
from uuid import UUID

import asyncpg

from ..graph.about_user import (
    about_someone_else,
    anyone_of_theirs,
    asks_of_user_alone,
    named_beside_their_person,
    named_persons_asked_about,
    named_persons_relation,
    person_asked_about,
    said_to_be,
    speaks_of_user,
    speaks_of_user_again,
    their_person,
    without_user,
)
from ..graph.name_forms import MASK
from ..graph.names import NAMES_WITHIN_CHARS, RUN, WORD, owned
from ..graph.questions import words_of_asked
from ..lexicon import Lexicon
from ..models import MOMENTS
from .query import RUN_WORDS, ParsedQuery, phrases_of
from .statement import Row

# The subject's memories among this many top results are the ones compared: each one compared is a
# text to embed the first time, and where someone has fifteen memories the answer was often past
# the first ten (crm, rules only: its newest version ranked 11-21 for 35 of the 127 questions the focus
# missed at ten; docs/benchmarks.md, fifty-second stop).
WINDOW = 20
POSSESSIVE = re.compile(r"'s$")


def _whole(words: str, flags: int = 0) -> re.Pattern[str]:
    """`words` as whole words, any white space between them, with a possessive."""
    return re.compile(r"(?<![\w'-])" + r"\s+".join(map(re.escape, words.split())) + r"(?:'s)?(?![\w'-])", flags)


def without_names(text: str, names: Sequence[str]) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = _whole(name).sub(MASK, text)
    return text


def subject_positions(rows: Sequence[asyncpg.Record],
                      parsed: ParsedQuery) -> tuple[list[int], Callable[[str], str]]:
    """Positions within the window of the memories about the question's subject, and how to take
    the subject out of a text. The subject is the names the question names (the memories the
    subject factor lifted), less a memory about someone in their life or stating another's asked
    attribute (`yours`); or else the user the agent works for, when the question speaks of them
    ("What car do I drive now?": every memory not about someone in their life,
    graph/about_user.py); or else its longest run of words at least two of them share. No word of
    the asked attribute names the subject (`words_of_asked`): "Postgres" in "Which Postgres version
    does the ledger pipeline use?" says what is asked, not of whom.
    Episodes aside: an episode is what happened at its moment, and a later one does not replace it
    (in a conversation every turn names its speaker; newest-first among them only reshuffles what
    was said)."""
    window = [i for i, r in enumerate(rows[:WINDOW]) if r["kind"] not in MOMENTS]
    lexicon = parsed.lexicon
    asked = parsed.asked or parsed.text
    attribute = words_of_asked(asked, lexicon)
    names, whom = _subject_names(parsed, attribute)
    if names:
        # The memories the subject factor lifted, or, where a capitalised word was the attribute's
        # ("Slack" of a channel), those naming the rest.
        named = ([i for i in window if rows[i]["about"] > 1] if len(names) == len(parsed.subject) else
                 [i for i in window if all(_whole(name).search(rows[i]["content"]) for name in names)])
        theirs = [i for i in named if yours(rows[i]["content"], asked, names, attribute, lexicon)]
        # A capitalised word none of them shares ("Which DB is the ledger pipeline on?") names
        # no subject; the run of words may. Named memories all someone else's leave none.
        if theirs:
            return (_narrowed(rows, theirs, names, parsed.text, whom, lexicon)
                    or (theirs, partial(without_names, names=names)))
        if named:
            return [], str
    role = person_asked_about(asked, lexicon)
    if role is not None:  # "Where does my sister live now?" is about her, not about the user
        person = their_person(role, lexicon)
        people = [i for i in window if person.search(rows[i]["content"])]
        # "My wife Sara works at Feedzai." says who she is: "Sara started at Talkdesk." is hers too.
        called = named_as(person, [rows[i]["content"] for i in people], lexicon)
        if called:
            by_role, by_name = set(people), [_whole(n) for n in called]
            people = [i for i in window if i in by_role or any(n.search(rows[i]["content"]) for n in by_name)]
        if len(people) >= 2:
            return people, partial(_person_and_names, person=person, names=called)
    elif speaks_of_user(asked, lexicon):
        users = [i for i in window if not about_someone_else(rows[i]["content"], lexicon)
                 and rows[i]["id"] not in parsed.about_their_people]
        if len(users) >= 2:
            return users, partial(without_user, mask=MASK, lexicon=lexicon)
    tokens = {i: _tokens(rows[i]["content"]) for i in window}
    for run in filter(whom, phrases_of(parsed.text, lexicon)):
        pattern = _whole(POSSESSIVE.sub("", run), re.IGNORECASE)
        positions = _sharing(run, pattern, rows, tokens)
        if len(positions) >= 2:
            return positions, partial(pattern.sub, MASK)
    return _by_one_word(rows, tokens, parsed, whom)


def _tokens(text: str) -> frozenset[str]:
    """Each run of up to `RUN_WORDS` words of `text` in a row (`_plain`)."""
    words = [_plain(w) for w in WORD.findall(text)]
    return frozenset(" ".join(words[i:i + n]) for n in range(1, RUN_WORDS + 1) for i in range(len(words) - n + 1))


def _plain(word: str) -> str:
    return POSSESSIVE.sub("", word.lower())


def _sharing(words: str, pattern: re.Pattern[str], rows: Sequence[asyncpg.Record],
             tokens: dict[int, frozenset[str]]) -> list[int]:
    """The positions in `tokens` of the rows `pattern` (`words` as whole words) finds. Only those
    holding the words in a row are searched: a long question of many words against long memories
    that hold them all, apart, cost seconds of searching each memory for each run of them."""
    needed = " ".join(_plain(w) for w in words.split())
    return [i for i, held in tokens.items() if needed in held and pattern.search(rows[i]["content"])]


def _by_one_word(rows: Sequence[asyncpg.Record], tokens: dict[int, frozenset[str]], parsed: ParsedQuery,
                 whom: Callable[[str], bool]) -> tuple[list[int], Callable[[str], str]]:
    """Where no run of the question's words is shared, the memories sharing one of its content words
    ("frontend" of "Where is the frontend deployed?": "The frontend is built with Next.js ..." and
    "Frontend moved from Vercel to Netlify."): of the words the best of them holds and at least one
    other shares, the one the fewest share, the most particular; of as many, the later in the
    question. A word the best result does not hold is not what the search found the question about:
    in a store of 400 "Weekly meeting N: ..." notes, "meeting" made them the subject of a question
    the one note on "kestrel" answered. None of the asked attribute's words (`whom`), nor a word no
    question is about."""
    lexicon = parsed.lexicon
    best: tuple[int, int, list[int], re.Pattern[str]] | None = None
    first = next(iter(tokens), None)  # the best result: `tokens` is keyed by the window in its order
    words = dict.fromkeys(POSSESSIVE.sub("", w) for w in WORD.findall(parsed.text))
    for at, word in enumerate(words):
        if word.lower() in lexicon.not_names or word.lower() in lexicon.stop_words or not whom(word):
            continue
        pattern = _whole(word, re.IGNORECASE)
        positions = _sharing(word, pattern, rows, tokens)
        if first in positions and len(positions) >= 2 and (best is None or (len(positions), -at) <= best[:2]):
            best = (len(positions), -at, positions, pattern)
    return ([], str) if best is None else (best[2], partial(best[3].sub, MASK))


def theirs_after(rows: Sequence[Row], parsed: ParsedQuery, boost: float) -> list[Row]:
    """`rows`, where the question asks of the user alone ("Where is my job?"), with the notes about
    someone in the user's life after the user's own: by their words ("My brother's job is in Graz
    now.") or by whom the graph files them about (`ParsedQuery.about_their_people`: "Lena got a new
    job at Siemens."), and not speaking of the user past the possessive naming that person ("My
    sister gave me a bike." stays where it ranks). Only the focus read them so, and where it compares
    nothing (fewer than two notes say the asked attribute in the lexicon's words) the brother's job
    came first, the user's "I work at Fernwood these days." third. Their factor shows it: the
    inverse of the subject factor's gain (`boost`). A conversation's turns are left as they are."""
    lexicon = parsed.lexicon
    if not asks_of_user_alone(parsed.asked or parsed.text, lexicon):
        return list(rows)

    def theirs(row: Row) -> bool:
        return row["kind"] not in MOMENTS and (
            row["id"] in parsed.about_their_people
            or about_someone_else(row["content"], lexicon) and not speaks_of_user_again(row["content"], lexicon))

    marked = [({**dict(r), "score": r["score"] / boost, "about": r["about"] / boost}, True) if theirs(r) else (r, False)
              for r in rows]
    return [r for r, _ in sorted(marked, key=lambda pair: pair[1])]


def about_their_people(subjects: Sequence[asyncpg.Record], lexicon: Lexicon) -> frozenset[UUID]:
    """Which memories the graph files about someone in the user's life (`subjects`: each memory's
    entity with what the first memories naming it say, repository `subjects_named`): one of those
    gives that entity's name to one of the user's people ("My brother Oskar Brandt lives in
    Turin.", "My manager is Tom Hale."). Then "Oskar left Hospital Santa Maria; now at Cedar
    Health." is his news, no answer to "Where do I work now?", though it names no role and no word
    for him. The memories read are those whose own words leave it open (search.py: a note speaking
    of the user too, "Oskar helped me move.", stays the user's)."""
    anyone = anyone_of_theirs(lexicon)
    entities = {r["entity_id"]: r for r in subjects}  # a memory each, the same entity's notes
    theirs = {e for e, r in entities.items()
              if {r["name"], r["name"].split()[0]} & set(named_as(anyone, r["contents"], lexicon))}
    return frozenset(r["memory_id"] for r in subjects if r["entity_id"] in theirs)


def named_as(person: re.Pattern[str], texts: Sequence[str], lexicon: Lexicon) -> list[str]:
    """The names `texts` give the user's person the role `person` matches, beside it ("My wife Sara
    Lopes works at Feedzai.", "Sara, my wife, ...") or saying who they are ("My wife is Sara.",
    "Sara is my wife."): the name and its first word, as a later note may call her by her first
    name alone (not her last: her brother may share it)."""
    names: list[str] = []
    for text in texts:
        text = text[:NAMES_WITHIN_CHARS]
        if (run := _name_given(person, text, lexicon)) is None:
            continue
        name = POSSESSIVE.sub("", run.group())
        names += [n for n in dict.fromkeys((name, name.split()[0]))
                  if n not in names and n.lower() not in lexicon.not_names]
    return names


def _name_given(person: re.Pattern[str], text: str, lexicon: Lexicon) -> re.Match[str] | None:
    """The run of capitalised words `text` gives the user's person `person` matches as their name."""
    if (said := said_to_be(text, lexicon)) is not None:
        (start, end), at = said
        return RUN.match(text, at) if person.search(text[start:end]) else None
    beside, role = named_beside_their_person(text, lexicon), person.search(text)
    if beside is None or role is None or (run := RUN.match(text, beside[0])) is None:
        return None
    after = run.start() >= role.end() and not text[role.end():run.start()].strip(" ,")
    before = run.end() <= role.start() and not text[run.end():role.start()].strip(" ,")
    # Not the name beside another of the user's people ("Rui, my brother, met my wife").
    return run if after or before else None


def _person_and_names(text: str, person: re.Pattern[str], names: Sequence[str]) -> str:
    """`text` with the user's person taken out, by their role and by the names given them: once
    where the two stand together ("My wife Sara works at Feedzai.": "someone works at Feedzai.")."""
    return _MASKS.sub(MASK, without_names(person.sub(MASK, text), names))


_MASKS = re.compile(rf"{MASK}(?:[\s,]+{MASK})+")


def _subject_names(parsed: ParsedQuery, attribute: frozenset[str]) -> tuple[list[str], Callable[[str], bool]]:
    """The question's names that may name its subject, and the test they passed (`whom`): no words of
    the asked attribute (`attribute`, their stems), which would make every subject's notes one subject's."""
    def whom(words: str) -> bool:
        return not attribute.intersection(parsed.lexicon.stems(words))

    return [name for name in parsed.subject if whom(name)], whom


def _question_names(parsed: ParsedQuery) -> list[str]:
    """The question's names that may name its subject (`_subject_names`, against the asked attribute's words)."""
    return _subject_names(parsed, words_of_asked(parsed.asked or parsed.text, parsed.lexicon))[0]


def names_its_subject(parsed: ParsedQuery) -> bool:
    """Whether the question names whom it asks of by a name not of the asked attribute's words ("What
    version of Next.js are we on?" asks of Next.js, not of the user; "What CI do we use?" of the user)."""
    return bool(_question_names(parsed))


def question_mask(parsed: ParsedQuery) -> Callable[[str], str] | None:
    """How `subject_positions` takes the subject out where the question alone tells whom it asks
    about (a person's full name, someone in the user's life, the user), so the question without its
    subject is known before any memory is read (searching.py embeds it in one run of the model with
    the question); None where the results decide (the run of words they share, or the longer run a
    one-word name is narrowed to: `_narrowed`). On the knowledge-update sets every text so embedded
    was the one the focus asked for (ops's "coupons API" and "team Umbra" are left to the results)."""
    lexicon = parsed.lexicon
    asked = parsed.asked or parsed.text
    names = _question_names(parsed)
    if names:
        # A name of one word may stand for a kind of thing the results narrow to a longer run ("API"
        # of "the coupons API", "Umbra" of "team Umbra"); a person's full name the results keep.
        in_full = {word for run in parsed.full_names for word in run}
        return partial(without_names, names=names) if in_full.issuperset(names) else None
    role = person_asked_about(asked, lexicon)
    if role is not None:
        return partial(their_person(role, lexicon).sub, MASK)
    if speaks_of_user(asked, lexicon):
        return partial(without_user, mask=MASK, lexicon=lexicon)
    return None


def _narrowed(rows: Sequence[asyncpg.Record], named: list[int], names: list[str], text: str,
              whom: Callable[[str], bool], lexicon: Lexicon) -> tuple[list[int], Callable[[str], str]] | None:
    """The named memories that share the longest run of the question's words (`text`) holding all
    its `names`, when at least two do, and that run taken out: a capitalised word may name a kind
    of thing rather than one ("Which region does the coupons API run in?": every API's memories
    name "API", the subject is "coupons API"; ops newest@1 .78 -> .83 offline, the other sets
    unchanged). A run holding the asked attribute's words is no subject (`whom`), nor one adding
    only a word saying what kind of thing the name is (the lexicon's `classifiers`): "Payments
    standup moved to 10:30" is the Payments team's, as names are resolved."""
    patterns = [_whole(name) for name in names]
    named_words = {w.lower() for name in names for w in name.split()}
    tokens = {i: _tokens(rows[i]["content"]) for i in named}
    for run in phrases_of(text):
        if len(run.split()) <= sum(len(name.split()) for name in names):
            break  # runs come longest first: the rest are no longer than the names themselves
        if whom(run) and all(name.search(run) for name in patterns):
            pattern = _whole(POSSESSIVE.sub("", run), re.IGNORECASE)
            if _named_with_classifier(run, named_words, lexicon):
                return named, partial(_run_and_names, run=pattern, names=names)
            positions = _sharing(run, pattern, rows, tokens)
            if len(positions) >= 2:
                return positions, partial(pattern.sub, MASK)
    return None


def _named_with_classifier(run: str, named_words: set[str], lexicon: Lexicon) -> bool:
    """Whether `run` is the names and a word for what kind of thing they name ("Payments team's"),
    not something of theirs ("Benedikt Pereira's project": a possessive before the last word)."""
    words = run.split()
    owned = any(POSSESSIVE.search(w) for w in words[:-1])
    return not owned and {POSSESSIVE.sub("", w).lower() for w in words} - named_words <= lexicon.classifiers


def _run_and_names(text: str, run: re.Pattern[str], names: list[str]) -> str:
    """`text` with the run of words naming the subject taken out, or its names where it is named
    without the run ("Team Kiln ...", "Kiln standup ...")."""
    return without_names(run.sub(MASK, text), names)


# How far after a possessive the attribute it owns is read: "Priya Fischer's line manager".
OWNED_WORDS = 2


def yours(text: str, question: str, names: Sequence[str], attribute: frozenset[str], lexicon: Lexicon) -> bool:
    """Whether `text`, naming the question's subject (`names`), is about them: not about someone in
    their life ("Aisha Esposito's sister has a manager called ...") unless the question asks of that
    someone, and not opening on another's asked attribute (`attribute`, its words' stems) before
    naming them ("Priya Fischer's manager is Aisha Esposito." tells who Priya's manager is, not
    Aisha's; "Aisha Esposito now reports to Omar Kim, who was Priya's manager" and "Omar Okafor has
    been Aisha Esposito's manager" are Aisha's). A relation that is the asked attribute itself ("Who
    is Aisha's partner?") is no one else's."""
    text = text[:NAMES_WITHIN_CHARS]  # as far as the graph reads names: a hostile text costs no more

    def other(role: str | None) -> str | None:
        return None if role is None or attribute.intersection(lexicon.stems(role)) else role

    if other(named_persons_relation(text, lexicon)) != other(named_persons_asked_about(question, lexicon)):
        return False
    subject = min((m.start() for name in names if (m := _whole(name).search(text))), default=len(text))
    for owner, after in owned(text, lexicon):
        if after > subject:
            break
        if set(lexicon.stems(" ".join(lexicon.words(text[after:after + 40])[:OWNED_WORDS]))) & attribute:
            return any(_whole(name).search(owner) for name in names)
    return True
