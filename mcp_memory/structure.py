"""What a new memory says of the graph, for the service: the writer's `about` and `key` checked and
read with the text's own names (graph/), a key in words the lexicon does not know filed under the
subject's attribute its text says the same thing of, and `related` with the earlier value a key
replaced first. The service's `structure` part; knows nothing of MCP."""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np

from . import limits
from .config import Settings
from .errors import InvalidInput
from .graph import Said, phrasebook
from .graph.keys import (
    Key,
    cued_by,
    filed_by_default,
    holds_one,
    in_lexicon,
    key_in,
    key_of,
    none_of_the_subjects,
    own_attribute,
    qualified,
    qualifier_in,
)
from .graph.name_forms import Name, classified
from .graph.names import bounded, read_names, with_text, writer_names
from .lexicon import Lexicon, phrases_pattern
from .models import Memory, Principal, RelatedMemory
from .repository import MemoryRepository
from .repository.graph_reads import current_facts, subject_facts
from .retrieval.dates import began_on
from .retrieval.key_meaning import named_plainly
from .retrieval.values import values_of_another_kind
from .retrieval.versions import earlier_versions, masked_pair, masked_similarities
from .validation import text
from .vectors import Vectors


def _filed(key: Key, attribute: str, single: bool, facts: list[Any]) -> Key:
    """A key in a writer's own words filed under `attribute`: the subject's facts already keyed in
    the same words go with it (`Key.absorbs`), whichever was written first (an import or a backfill
    brings values out of order)."""
    own = any(r["attribute"] == key.attribute for r in facts)
    return Key(attribute, key.words, single, absorbs=(key.attribute,) if own else ())


@functools.cache
def _name_attributes(lexicon: Lexicon) -> frozenset[str]:
    """The attributes the lexicon's `name_keys` are filed under (a key's attribute is its words' stems)."""
    return frozenset(k.attribute for word in lexicon.name_keys if (k := key_of(word, lexicon)) is not None)


def _checked(about: list[str], where: str) -> None:
    """A writer's `about` as the tools take it; a bad one names the argument."""
    if len(about) > limits.MAX_ABOUT:
        raise InvalidInput(f"{where}about has {len(about)} names; at most {limits.MAX_ABOUT}")
    for i, name in enumerate(about):
        if not isinstance(name, str) or not name.strip() or len(name) > limits.MAX_NAME_CHARS:
            raise InvalidInput(f"{where}about[{i}] must be a name of 1-{limits.MAX_NAME_CHARS} characters "
                               "(a person, 'me' for the user, a project, a place)")
        text(f"{where}about[{i}]", name)


class Structure:
    def __init__(self, repo: MemoryRepository, settings: Settings, lexicon: Lexicon, vectors: Vectors | None) -> None:
        self.repo, self.settings, self.lexicon, self.vectors = repo, settings, lexicon, vectors

    def said(self, content: str, kind: str, about: list[str] | None, key: str | None, where: str = "") -> Said:
        """The writer's `about` and `key` where given, the names the text holds by rules always (a
        name the writer did not list is one it mentions); a bad one names the argument."""
        lexicon = self.lexicon
        if about is not None:
            _checked(about, where)
        names = bounded(classified(with_text(classified(writer_names(about or [], lexicon.user_names), lexicon),
                                             read_names(content, kind, lexicon)), lexicon),
                        self.settings.graph_max_names)
        said_key = None
        if key is not None:
            said_key = key_of(text(f"{where}key", key), lexicon)
            if said_key is None:
                raise InvalidInput(f"{where}key '{key}' names no attribute: say which, in a few words ('home city')")
            if not any(n.role == "about" for n in names):
                raise InvalidInput(f"{where}key '{key}' needs whom it is about, and the text does not say: pass "
                                   "about (e.g. ['me'] for the user, or a name)")
            said_key = cued_by(said_key, content, lexicon)
        rules = self.settings.graph_rules_keys
        if said_key is not None or rules == "off" or not names or names[0].role != "about":
            return Said(names, said_key, "writer" if about or key else "rules",
                        names_subject=said_key is not None and said_key.attribute in _name_attributes(lexicon))
        read = key_in(content, lexicon, [n.display for n in names if not n.user])
        return Said(names, read, "writer" if about else "rules", replaces=rules == "replace", key_source="rules")

    def about_given(self, about: list[str]) -> list[Name]:
        """An update's `about`: whom the memory is about instead, each a name the writer is sure of."""
        if not about:
            raise InvalidInput("about: pass at least one name (a person, 'me' for the user, a project, a place); "
                               "nothing was changed")
        _checked(about, "")
        return classified(writer_names(about, self.lexicon.user_names), self.lexicon)

    def began(self, content: str, kind: str, said: Said) -> datetime | None:
        """When a keyed memory's value became true by its own words, for a write that passes no
        `occurred_at`: the start of the one date its text names, a day, a month of a year or a year
        ("moved to Berlin in March 2026", "has lived in Porto since 2019", "is moving to Leeds on 3
        May 2027": upcoming until then), or the day, week, month or year it names from now ("moved
        to Leeds last month": the first of last month; "two weeks ago"). Only for the lexicon's
        attributes whose values are no time: of a date (a birthday, a standup time) or of a key in
        the writer's own words ("launch date", "deadline") the date may be the value, and a launch
        moved from March to February, dated by its text, would have stayed behind the March one.
        None too for a turn (said at its moment), a text naming several dates, a month of no year,
        or a span's end alone ("before 2019"): the write's own time is then the best there is.
        Written now and read as now, "moved to Berlin in March 2026" came after a value dated in
        September that it preceded, and stood current in its place."""
        attribute = phrasebook.by_name(self.lexicon).get(said.key.attribute) if said.key is not None else None
        if kind == "episode" or attribute is None or attribute.answers == "time":
            return None
        return began_on(content, self.lexicon, datetime.now(UTC))

    def read(self, content: str, kind: str) -> list[Name]:
        """The names a text holds by rules, bounded as a write's are: what an update's new text says."""
        return bounded(read_names(content, kind, self.lexicon), self.settings.graph_max_names)

    async def adopted(self, p: Principal, content: str, said: Said) -> Said:
        """Keys in a writer's own words name attributes of their own ("writes its data to", "catch-up time"),
        so the subject's value under other words ("database") would stay current beside a new one.
        Words the writer has used of this subject before for another attribute mean that attribute
        (`_worded`); words that plainly name one of the lexicon's attributes the subject holds values
        of mean that one ("oncall area", retrieval/key_meaning.py `named_plainly`). Otherwise, when
        the text says the same kind of thing as exactly one current value of the subject
        (retrieval/versions.py `earlier_versions`: same subject, the closest with the names masked)
        and at least `graph_adopt_floor` close, the two are one attribute: a key in its own words
        takes that value's attribute, and takes in the subject's facts already keyed in those words;
        a key of the lexicon's takes in that value's own-words attribute (`Key.absorbs`). Two
        attributes of the lexicon stay apart: where the lexicon speaks, restating is no evidence
        ("left Acme for Globex as a staff engineer" is close to a job title and an employer alike).
        Below the floor a subject's other facts pass for it (.50: "has a green badge" and "is owned
        by Oskar Lund"; a restatement is .73 and up), and naming the old value alone does not
        count. A value keyed as someone else's or an earlier one ("wife's employer", "previous
        employer") is never taken in, nor takes in."""
        floor = self.settings.graph_adopt_floor
        if said.key is None or not said.about or floor >= 1 or none_of_the_subjects(said.key.words, self.lexicon):
            return said  # "sister's manager" is hers, "previous employer" was: no current value of the subject's
        known = in_lexicon(said.key.attribute, self.lexicon)
        if known and not said.key.single:  # many values: a new one replaces nothing to take in
            return said
        facts, replaced = await subject_facts(self.repo, p, said.about)
        if known and (apart := self._sibling(content, said.key, facts)) is not None:
            return replace(said, key=apart)
        if known and not said.key.alternatives and (
                taken := self._defaulted(content, said, facts) + await self._named_before(said.key, facts)):
            said = replace(said, key=replace(said.key, absorbs=taken))
        if not known and (worded := self._worded(said.key, facts)) is not None:
            return replace(said, key=worded)
        if not known and self.vectors is not None and facts and (
                named := await named_plainly(self.vectors, self.lexicon, said.key.words)) is not None \
                and named in {r["attribute"] for r in facts}:
            return replace(said, key=_filed(said.key, named, holds_one(named, self.lexicon), facts))
        heads = [r for r in facts if r["id"] not in replaced and r["single"] and r["attribute"] != said.key.attribute
                 and not (known and in_lexicon(r["attribute"], self.lexicon))
                 and not none_of_the_subjects(r["key_words"], self.lexicon)]
        if not heads or self.vectors is None:
            return said
        judged = await self._restated(content, heads, floor)
        if judged is None:
            return said
        flags, close = judged
        # Naming the old value flags a version whatever its wording; a key is only taken at the floor.
        chosen = {r["attribute"] for r in heads if flags.get(r["id"]) and close[r["id"]] >= floor}
        if len(chosen) != 1:
            return said
        attribute = chosen.pop()
        if known:
            return replace(said, key=replace(said.key, absorbs=(*said.key.absorbs, attribute)))
        return replace(said, key=_filed(said.key, attribute, True, facts))

    async def apart(self, p: Principal, items: list[tuple[str, Said]]) -> list[Said]:
        """A batch's keys, each kept apart from a thing qualifying the same head word otherwise
        (`_sibling`) among its subject's stored facts and the batch's items before it. The batch
        reads no other adoption (docs/graph.md); a subject's stored facts are read once, and only
        for a key of the lexicon's attributes with a qualifier."""
        out: list[Said] = []
        earlier: list[tuple[frozenset[str], dict[str, Any]]] = []
        stored: dict[frozenset[str], list[Any]] = {}
        for content, said in items:
            key, whom = said.key, frozenset(n.canonical for n in said.about)
            mine = qualified(key.words, self.lexicon) if key is not None and whom else None
            if key is not None and mine is not None and mine[1]:
                if whom not in stored:
                    stored[whom] = (await subject_facts(self.repo, p, said.about))[0]
                facts = [*stored[whom], *(row for subject, row in earlier if subject == whom)]
                if (kept := self._sibling(content, key, facts)) is not None:
                    said = replace(said, key=kept)
            if said.key is not None and whom:
                earlier.append((whom, {"attribute": said.key.attribute, "key_words": said.key.words,
                                       "content": content}))
            out.append(said)
        return out

    def _sibling(self, content: str, key: Key, facts: list[Any]) -> Key | None:
        """`key`, of one of the lexicon's attributes, as an attribute of its own words where the
        subject holds a value of that attribute under the same head qualified otherwise
        (`graph/keys.qualified`), each text naming its own qualifier and not the other's: "Heron
        runs on Node 20." keyed "node version" and "Heron's ML worker uses Python 3.12." keyed
        "python version" are two things' versions, and the second replaced the first; so did a
        billing address a home address. Words alike for one attribute ("hosting region", "cloud
        region") qualify it with its own words, or not in the texts."""
        lexicon = self.lexicon
        mine = qualified(key.words, lexicon)
        if mine is None or not mine[1]:
            return None
        head, qualifiers = mine
        here = set(lexicon.stems(content))
        if not qualifiers <= here:
            return None
        for r in facts:
            theirs = qualified(r["key_words"], lexicon) if r["attribute"] == key.attribute else None
            if theirs is None or theirs[0] != head:
                continue
            # A fact keyed by the head alone is qualified by its text: "laptop" of "The user's work
            # laptop is a ThinkPad X1." is no gaming laptop. (Not the other way round: a new key of
            # the head alone in "xonsh is the login shell now" is the shell keyed "terminal shell".)
            their = theirs[1] or qualifier_in(r["content"], head, lexicon)
            if not their or their & qualifiers or their & here:
                continue
            text = set(lexicon.stems(r["content"]))
            if their <= text and not qualifiers & text:
                stems = lexicon.stems(key.words, drop=lexicon.key_fillers)
                return Key(" ".join(stems), key.words, key.single)
        return None

    async def _named_before(self, key: Key, facts: list[Any]) -> tuple[str, ...]:
        """The subject's attributes in a writer's own words that plainly name `key`'s attribute
        (retrieval/key_meaning.py `named_plainly`), written before the subject held any value of
        it: had they come after, they would have been filed under it (`adopted`), so they are
        now, whichever came first ("rotation" of "... joined the streaming rotation", then
        "on-call"). Words of someone else's value, or an earlier one ("kid's school"), never are."""
        if self.vectors is None:
            return ()
        own = {r["attribute"]: r["key_words"] for r in facts if not in_lexicon(r["attribute"], self.lexicon)
               and not none_of_the_subjects(r["key_words"], self.lexicon)}
        if not own or any(r["attribute"] == key.attribute for r in facts):
            return ()
        return tuple(sorted([a for a, words in own.items()
                             if await named_plainly(self.vectors, self.lexicon, words) == key.attribute]))

    def _defaulted(self, content: str, said: Said, facts: list[Any]) -> tuple[str, ...]:
        """The subject's attributes of the lexicon all of whose facts were filed there only by the
        lexicon's order, in words that name the key's attribute too (graph/keys.py
        `filed_by_default`), with values of a kind the new text's are (retrieval/values.py
        `values_of_another_kind`, the subject masked): "based in" went to a home city with nothing
        to say it was not an office, and a later "works from" says which, whichever came first;
        "phone" of "Call Greta on 555 0134" went to a phone number, and a handset's "Pixel 8" is
        no number."""
        assert said.key is not None
        key, names = said.key, [n.display for n in said.about]
        by_attribute: dict[str, list[Any]] = {}
        for r in facts:
            if r["attribute"] != key.attribute and in_lexicon(r["attribute"], self.lexicon):
                by_attribute.setdefault(r["attribute"], []).append(r)
        return tuple(sorted(a for a, rows in by_attribute.items() if all(
            filed_by_default(a, r["key_words"], r["content"], key.attribute, self.lexicon)
            and not values_of_another_kind(*masked_pair(content, r["content"], names)[:2]) for r in rows)))

    def _worded(self, key: Key, facts: list[Any]) -> Key | None:
        """`key`, in words the lexicon does not know, as the one other attribute of the subject that
        a fact keyed in the same words was filed under (adopted there, `adopted`): one writer's words
        for one subject mean one attribute, whichever order the values come in. Facts already under
        the key's own attribute go with it (`Key.absorbs`). None when no other attribute, or two,
        were keyed so."""
        elsewhere = {r["attribute"]: r["single"] for r in facts if r["attribute"] != key.attribute
                     and own_attribute(r["key_words"], self.lexicon) == key.attribute}
        if len(elsewhere) != 1:
            return None
        attribute, single = elsewhere.popitem()
        return _filed(key, attribute, single, facts)

    async def ended(self, p: Principal, content: str, said: Said) -> Said:
        """A many-valued attribute keeps its values until one is said to have ended: a text in the
        lexicon's words for that ("no longer", "gave up") ends the subject's current value of the
        key it restates, the closest with the names masked and at least `graph_adopt_floor` close
        ("Greta is no longer allergic to peanuts" of "Greta is allergic to peanuts", not of her
        shellfish allergy); or the one whose value it names beside another."""
        floor = self.settings.graph_adopt_floor
        if said.key is None or said.key.single or not said.about or self.vectors is None or floor >= 1:
            return said
        if not self._ended.search(content):
            return said
        heads = [r for r in await current_facts(self.repo, p, said.about) if r["attribute"] == said.key.attribute]
        if not heads:
            return said
        judged = await self._restated(content, heads, floor)
        if judged is None:
            return said
        ends = tuple(r["id"] for r in heads if judged[0].get(r["id"]))
        return replace(said, ends=ends) if ends else said

    async def _restated(self, content: str, heads: list[Any], floor: float
                        ) -> tuple[dict[UUID, bool | None], dict[UUID, float]] | None:
        """Which of the subject's values `content` restates (retrieval/versions.py
        `earlier_versions`, at `floor`), and each one's masked cosine; None without the embedder."""
        assert self.vectors is not None
        close = await masked_similarities(content, heads, self.vectors)
        if close is None:
            return None
        return await earlier_versions(content, heads, self.vectors, floor, known=close), close

    @functools.cached_property
    def _ended(self) -> re.Pattern[str]:
        words = phrases_pattern(self.lexicon.ended)
        return re.compile(rf"(?i)(?<![\w'-])(?:{words})(?![\w'-])" if words else "(?!)")

    async def same_key_first(self, p: Principal, memory: Memory, vector: list[float] | None,
                             related: list[RelatedMemory]) -> list[RelatedMemory]:
        """`related` with the earlier values the new memory's key replaced first, marked, whether or
        not they were among its closest."""
        replaced = list(memory.replaced or ())
        listed = {r.id: r for r in related}
        absent = [i for i in replaced if i not in listed]
        missing = await self.repo.peek_many(p, absent) if absent else []
        texts = await self.vectors.documents_or_none([m.content for m in missing]) if self.vectors and missing else None
        for i, m in enumerate(missing):
            similarity = float(np.dot(vector, texts[i])) if vector is not None and texts is not None else 0.0
            listed[m.id] = RelatedMemory(id=m.id, snippet=m.content[:self.settings.snippet_chars], kind=m.kind,
                                         age=m.age, similarity=round(similarity, 4))
        first = [listed[i].model_copy(update={"same_key": True, "earlier_version": True, "superseded_by": memory.id})
                 for i in replaced if i in listed]
        kept: set[UUID] = set(replaced)
        return first + [r for r in related if r.id not in kept]
