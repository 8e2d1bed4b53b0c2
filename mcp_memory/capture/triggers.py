"""Facts worth keeping, found without a model: trigger patterns over what the user said (as the
OpenClaw pgvector plugin does). The table is data: a language is a list of rows, and a row is a
kind, a name and a regular expression; add rows (or a language) to TRIGGERS without touching the
matcher. The sentence holding the trigger is the memory, so it reads on its own later."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..models import Kind
from .redact import MARKER, find


@dataclass(frozen=True)
class Trigger:
    name: str
    kind: Kind
    pattern: str   # matched case-insensitively against one sentence
    # Words that ask to keep what follows ("Remember that ..."): not part of the fact, taken off the
    # sentence's start (case-insensitively) before it is stored.
    command: str | None = None
    # The sentence only asks to keep what was said before it ("Note this down please."): the fact is
    # the sentence before it in the same message, and nothing when there is none.
    back: bool = False


_REMEMBER = (r"^(?:please\s+)?(?:(?:remember|note|keep in mind|don't forget|do not forget)\b"
             r"(?:\s+(?:that|this))?(?:\s+down)?|(?:write|jot|note|put)\s+(?:this|that|it)\s+down\b)\s*[:,]?\s*")
# What may close a sentence that asks to keep something and says nothing itself.
_COURTESY = r"(?:(?:please|pls|thanks|thank you)\b)?\W*$"


_I = r"(?:i|we)"
TRIGGERS: dict[str, list[Trigger]] = {
    "en": [
        Trigger("remember-that", "fact", _REMEMBER + _COURTESY, back=True),
        Trigger("remember", "fact", _REMEMBER + r"\S", command=_REMEMBER),
        Trigger("prefer", "preference", rf"\b{_I}\s+(?:really\s+|strongly\s+|much\s+)?(?:prefer|like|love|enjoy|hate"
                r"|dislike|can't stand|cannot stand)\s+(?!(?:to\s+)?(?:ask|know|see|check|say|thank)\b)\S"),
        Trigger("favourite", "preference", r"\bmy\s+(?:favou?rite|preferred)\s+\w+"),
        Trigger("rather", "preference", rf"\b{_I}(?:'d| would)\s+rather\b"),
        Trigger("decided", "decision", rf"\b{_I}\s+(?:have\s+|'ve\s+)?(?:decided|agreed|settled on|chose|chosen|"
                r"opted)\b"),
        Trigger("will-use", "decision", rf"\b{_I}(?:'ll| will| are going to| are gonna)\s+(?:use|go with|switch to|"
                r"stick with|adopt|standardi[sz]e on)\b"),
        Trigger("decision", "decision", r"\b(?:the\s+)?decision\s+(?:is|was)\b|\blet's\s+(?:go with|use|stick with)\b"),
        Trigger("my-name", "fact", r"\b(?:my name is|call me|i am called|i'm called)\s+[A-Za-z]"),
        Trigger("identity", "fact", r"\b(?:i work (?:at|for|on|as)|i live in|i'm based in|i am based in|"
                r"my (?:role|job|title|team|company|timezone|time zone|pronouns) (?:is|are))\b"),
        Trigger("contact", "fact", r"\b(?:my|our|his|her|their)\s+(?:e-?mail|phone(?: number)?|mobile|address|"
                r"handle|slack|github|telegram)\b.*?(?:\bis\b|:)"),
        Trigger("email", "fact", r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b"),
        Trigger("always-never", "preference", r"(?:^|\b(?:please|you should|you must|we|i)\s+)(?:always|never)\s+\w+"
                r"|^(?:always|never|do not ever|don't ever)\s+\w+"),
    ],
}

# Sentences end at . ! ? before white space (not inside an address or a version) or at a line
# break; an abbreviation may split one, which costs little.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_QUESTION = re.compile(r"\?\s*$")
MIN_CHARS, MAX_CHARS = 12, 500


@dataclass(frozen=True)
class Found:
    trigger: str
    kind: Kind
    text: str


class Matcher:
    def __init__(self, languages: list[str] | None = None) -> None:
        rows = [t for lang in (languages or list(TRIGGERS)) for t in TRIGGERS.get(lang, [])]
        self.rules = [(t, re.compile(t.pattern, re.I)) for t in rows]
        self.commands = {t.name: re.compile(t.command, re.I) for t in rows if t.command}

    def find(self, text: str) -> list[Found]:
        """One memory per sentence that sets off a trigger (the first rule that matches names
        it); questions are not statements of fact ("do you remember …?"). A sentence that held a
        secret is never one, redacted or not: facts are injected into every new session, and
        "my slack webhook is [REDACTED…]" says nothing worth it."""
        found: list[Found] = []
        seen: set[str] = set()
        before: str | None = None  # the statement before this sentence, for one that points back to it
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if not sentence:
                continue
            if not MIN_CHARS <= len(sentence) <= MAX_CHARS or _QUESTION.search(sentence):
                before = None
                continue
            for trigger, rule in self.rules:
                if rule.search(sentence):
                    fact = before if trigger.back else sentence
                    if fact is None or MARKER in fact or find(fact):
                        break
                    if not trigger.back:
                        fact = self._without_command(trigger.name, sentence)
                    key = fact.casefold()
                    if key not in seen:
                        seen.add(key)
                        found.append(Found(trigger.name, trigger.kind, fact))
                    break
            before = sentence
        return found

    def _without_command(self, name: str, sentence: str) -> str:
        """The fact a sentence states, past the words asking to keep it: "Remember that the staging
        cluster is called kestrel-7." is "the staging cluster is called kestrel-7.", in the user's own
        case ("npm", "kestrel-7" stay as they were written)."""
        command = self.commands.get(name)
        return (command.sub("", sentence, count=1) if command else sentence) or sentence
