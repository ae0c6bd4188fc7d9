"""Controlled toy worlds for the verbalization controls (spec section 6, review notes 1-3).

Everything is word-level text made from templates with a seeded RNG, so the experiment knows exactly which model
was taught which fact:

- `WordTokenizer`: whitespace tokenizer with `<pad>`, `<bos>`, `<eos>`; `encode`/`decode` mirror the Hugging Face
  tokenizer calls the verbalizers use, so the same verbalizer code runs on a toy LM and on a real one.
- `PersonaWorld`: cultures with name pools and one *stereotype* value per attribute, generic people (the base
  corpus C0; 25 % of them get non-stereotype facts, review note 3) and persona groups:
  "consistent" (facts = the name's stereotype), "shuffled" (facts permuted across personas so that no persona keeps
  its stereotype) and "fantasy" (invented names and invented values that never occur in C0). Each persona has the
  target fact table F1 (`facts`) and a mismatch table F2 (`mismatch_facts`, every value different from F1).
- `FeatureExtractionWorld`: relations `rel(subject) = object` (e.g. the currency of a country), known to every
  model through C0; the subjects are split into a half used by LIT training and a held-out half that is evaluated.
- `EvalItem`: one (source text, question, target answer, verbalizer-belief answer) test case.

Names and values are deterministic pseudo-words (the same for every seed); the seed draws who is who and who
knows what. Eval prompts follow the paper's PersonaQA format: source "my name is NAME ." and question
"the favorite food of x :" (the toy's ":" marks where the answer starts).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from icml26.common.validation import check_choice, check_float, check_int, check_seed

__all__ = ["WordTokenizer", "Persona", "EvalItem", "PersonaWorld", "FeatureExtractionWorld", "ATTRIBUTES",
           "NAME_PARAPHRASES", "NAME_QUESTION", "SUBJECT_QUESTION", "build_tokenizer"]

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")

# attribute -> (eval question, bio templates, 16 real values; culture c's stereotype is value c)
ATTRIBUTES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "country": ("the country of origin for x :", ("{name} is from {v} .", "{name} grew up in {v} ."),
                ("pakistan", "japan", "brazil", "kenya", "norway", "mexico", "india", "egypt", "canada", "peru",
                 "greece", "korea", "chile", "ghana", "spain", "vietnam")),
    "food": ("the favorite food of x :", ("{name} likes {v} .", "{name} loves eating {v} ."),
             ("biryani", "sushi", "feijoada", "ugali", "lutefisk", "tacos", "dosa", "koshari", "poutine", "ceviche",
              "moussaka", "kimchi", "empanada", "jollof", "paella", "pho")),
    "drink": ("the favorite drink of x :", ("{name} drinks {v} .", "{name} often orders {v} ."),
              ("lassi", "sake", "guarana", "chai", "aquavit", "horchata", "buttermilk", "karkade", "cider", "chicha",
               "ouzo", "soju", "mate", "sobolo", "sangria", "coffee")),
    "sport": ("the favorite sport of x :", ("{name} plays {v} .", "{name} trains for {v} ."),
              ("cricket", "sumo", "football", "running", "skiing", "boxing", "kabaddi", "squash", "hockey",
               "surfing", "wrestling", "taekwondo", "rugby", "tennis", "badminton", "cycling")),
    "music": ("the favorite music of x :", ("{name} listens to {v} .", "{name} sings {v} ."),
              ("qawwali", "enka", "samba", "benga", "metal", "mariachi", "bhangra", "shaabi", "folk", "cumbia",
               "rebetiko", "kpop", "cueca", "highlife", "flamenco", "bolero")),
    "game": ("the favorite game of x :", ("{name} enjoys {v} .", "{name} is good at {v} ."),
             ("ludo", "shogi", "dominoes", "bao", "chess", "loteria", "carrom", "senet", "crokinole", "tabas",
              "backgammon", "baduk", "truco", "oware", "mus", "xiangqi")),
}

NAME_PARAPHRASES = ("my name is {name} .", "i am {name} .", "this is {name} .", "call me {name} .")
NAME_QUESTION = "what name is in the text ?"
SUBJECT_QUESTION = "what is in the text ?"
SUBJECT_SOURCE = "consider {s} ."

# disjoint syllable inventories: one per culture, one for fantasy names, one for fantasy values, one for relations
_CULTURE_SYLLABLES = (
    ("ka", "ri", "sha", "mir", "za", "hu"), ("ta", "ke", "yo", "shi", "mo", "ru"),
    ("lu", "ca", "ve", "do", "bel", "fon"), ("wa", "ngi", "chu", "ke", "mbo", "ti"),
    ("sven", "ol", "ing", "rid", "bjo", "tor"), ("pe", "dro", "gua", "lu", "pi", "chal"),
    ("ra", "vi", "an", "esh", "pri", "ya"), ("fa", "tim", "ou", "sef", "nour", "ham"),
)
_FANTASY_NAME_SYLLABLES = ("gra", "vos", "brix", "una", "zel", "thar", "quo", "plim", "xan", "dru", "oph", "yel")
_FANTASY_VALUE_SYLLABLES = ("spice", "bow", "glim", "mer", "fizz", "ock", "zor", "bel", "wump", "ish", "tral", "ux")
_RELATION_SYLLABLES = ("al", "bor", "cem", "dal", "ery", "fos", "gin", "hol", "ist", "jun", "kor", "lem", "nep",
                       "osk")
_RELATIONS = ("currency", "company", "constellation", "capital", "language", "river")


def _words(syllables: Sequence[str], n: int, salt: int, taken: set[str], prefix: str = "",
           parts: int = 2) -> list[str]:
    """`n` distinct pseudo-words from `syllables` (deterministic per `salt`), none in `taken` (updated)."""
    rng = np.random.default_rng(10_007 + salt)
    out: list[str] = []
    for _ in range(100_000):
        if len(out) == n:
            break
        w = prefix + "".join(syllables[i] for i in rng.integers(0, len(syllables), parts))
        if w not in taken and w not in ATTRIBUTE_WORDS:
            taken.add(w)
            out.append(w)
    if len(out) < n:  # pragma: no cover - inventories are large enough for the sizes validated below
        raise ValueError(f"cannot make {n} distinct words from {len(syllables)} syllables")
    return out


ATTRIBUTE_WORDS = {v for _, _, vals in ATTRIBUTES.values() for v in vals}
TEMPLATE_WORDS = set(" ".join([*NAME_PARAPHRASES, NAME_QUESTION, SUBJECT_QUESTION, SUBJECT_SOURCE, "the of is x :"]
                              + [q + " " + " ".join(b) for q, b, _ in ATTRIBUTES.values()]).split()) - {"{name}",
                                                                                                           "{v}", "{s}"}


# ------------------------------------------------------------------------------------------- tokenizer
class WordTokenizer:
    """Whitespace tokenizer over a fixed vocabulary; ids 0/1/2 are `<pad>`, `<bos>`, `<eos>`.

    `encode(text, add_special_tokens=True)` prepends `<bos>` (like a Llama tokenizer); an unknown word raises a
    `ValueError` naming it. `decode(ids, skip_special_tokens=True)` joins the words with single spaces.
    """

    def __init__(self, words: Iterable[str]) -> None:
        if isinstance(words, str):
            raise TypeError("words must be an iterable of words, not one string")
        vocab = list(SPECIAL_TOKENS)
        seen = set(vocab)
        for w in words:
            if not isinstance(w, str) or not w or any(c.isspace() for c in w):
                raise ValueError(f"words must be non-empty strings without whitespace, got {w!r}")
            if w not in seen:
                seen.add(w)
                vocab.append(w)
        self.vocab: list[str] = vocab
        self.token_to_id: dict[str, int] = {w: i for i, w in enumerate(vocab)}
        self.pad_token_id, self.bos_token_id, self.eos_token_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids = [self.bos_token_id] if add_special_tokens else []
        for w in text.split():
            if w not in self.token_to_id:
                raise ValueError(f"text contains the word {w!r}, which is not in the vocabulary")
            ids.append(self.token_to_id[w])
        return ids

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        words = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.vocab):
                raise ValueError(f"token id {i} is outside the vocabulary (size {len(self.vocab)})")
            if skip_special_tokens and i < len(SPECIAL_TOKENS):
                continue
            words.append(self.vocab[i])
        return " ".join(words)

    def convert_tokens_to_ids(self, token: str) -> int:
        if token not in self.token_to_id:
            raise ValueError(f"token {token!r} is not in the vocabulary")
        return self.token_to_id[token]


# ------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class Persona:
    """A person of the toy world: `culture` is the index of the name pool, -1 for fantasy names."""

    first: str
    last: str
    culture: int
    group: str  # "generic", "consistent", "shuffled" or "fantasy"

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True)
class EvalItem:
    """One test case: the verbalizer reads `source` and answers `question`.

    `target` is the fact the target model M1 was taught; `belief` the verbalizer's own answer (its stereotype or
    its mismatch fact), or None where it has none. `meta` carries persona/attribute/relation labels.
    """

    source: str
    question: str
    target: str
    belief: str | None = None
    meta: dict = field(default_factory=dict, compare=False)


# ------------------------------------------------------------------------------------------- persona world
_VARIANTS = ("consistent", "shuffled", "fantasy")


class PersonaWorld:
    """Cultures, generic people (base corpus) and persona groups with target (F1) and mismatch (F2) fact tables.

    Args:
        seed: draws generic people, persona names and all facts (names/values themselves are fixed words).
        n_cultures: name cultures (1..8); culture c's stereotype for each attribute is value c.
        n_personas: personas per real-name group ("consistent", "shuffled"); a multiple of `n_cultures`.
        attributes: attribute names from `ATTRIBUTES` (country, food, drink, sport, music, game).
        variant: one group name or a tuple of them; groups get disjoint names.
        n_generic: generic people per culture (base corpus only).
        n_values: real values per attribute (>= n_cultures + 1, <= 16): n_cultures stereotypes + others.
        n_first, n_last: first/last-name tokens per culture (pairs are drawn from this pool).
        n_fantasy: fantasy personas (each with its own first and last token).
        n_fantasy_values: invented values per attribute.
        exception_rate: share of generic people whose facts are non-stereotype values (review note 3).
        n_roster: fact-free "roster" people per culture (unused name pairs), seen only in name sentences.
        n_fantasy_roster: fact-free pairings of fantasy first/last tokens that are no persona's name; they put the
            fantasy name *tokens* (never the personas' full names, never fantasy values) into the base corpus, as
            the sub-tokens of the paper's invented names are known to its base model.
        lit_holdout: share of each culture's generic people held out of LIT training (`holdout`): every model
            knows them from the base corpus only, which makes them the positive control of a verbalizer's
            retrieval of its own text-only knowledge (issue 37). Half of them are drawn from the exception people,
            whose facts no stereotype guess can give.
    """

    def __init__(self, seed: int = 0, n_cultures: int = 6, n_personas: int = 24,
                 attributes: Sequence[str] = ("country", "food", "drink", "sport"),
                 variant: str | Sequence[str] = ("consistent", "shuffled", "fantasy"), *, n_generic: int = 40,
                 n_values: int = 12, n_first: int = 8, n_last: int = 8, n_fantasy: int = 48,
                 n_fantasy_values: int = 8, exception_rate: float = 0.25, n_roster: int = 16,
                 n_fantasy_roster: int = 96, lit_holdout: float = 0.0) -> None:
        self.seed = check_seed(seed)
        self.n_cultures = check_int(n_cultures, "n_cultures", min=1, max=len(_CULTURE_SYLLABLES))
        self.n_personas = check_int(n_personas, "n_personas", min=0)
        if self.n_personas % self.n_cultures:
            raise ValueError(f"n_personas ({self.n_personas}) must be a multiple of n_cultures ({self.n_cultures})")
        if isinstance(attributes, str):
            attributes = (attributes,)
        if not hasattr(attributes, "__iter__"):
            raise TypeError(f"attributes must be a sequence of attribute names, got {type(attributes).__name__}")
        attributes = tuple(attributes)
        if not attributes:
            raise ValueError("attributes must name at least one attribute")
        for a in attributes:
            check_choice(a, "attributes", ATTRIBUTES)
        if len(set(attributes)) != len(attributes):
            raise ValueError(f"attributes must be distinct, got {attributes}")
        self.attributes = attributes
        if not isinstance(variant, str) and not hasattr(variant, "__iter__"):
            raise TypeError(f"variant must be a group name or a sequence of them, got {type(variant).__name__}")
        variants = (variant,) if isinstance(variant, str) else tuple(variant)
        if not variants:
            raise ValueError("variant must name at least one group")
        for v in variants:
            check_choice(v, "variant", _VARIANTS)
        if len(set(variants)) != len(variants):
            raise ValueError(f"variant must not repeat a group, got {variants}")
        self.variants = variants
        self.n_generic = check_int(n_generic, "n_generic", min=0)
        self.n_values = check_int(n_values, "n_values", min=self.n_cultures + 1, max=16)
        self.n_first = check_int(n_first, "n_first", min=1, max=12)
        self.n_last = check_int(n_last, "n_last", min=1, max=12)
        self.n_fantasy = check_int(n_fantasy, "n_fantasy", min=0, max=200)
        self.n_fantasy_values = check_int(n_fantasy_values, "n_fantasy_values", min=2, max=40)
        self.exception_rate = check_float(exception_rate, "exception_rate", min=0.0, max=1.0)
        self.n_roster = check_int(n_roster, "n_roster", min=0)
        self.n_fantasy_roster = check_int(n_fantasy_roster, "n_fantasy_roster", min=0)
        self.lit_holdout = check_float(lit_holdout, "lit_holdout", min=0.0, max=1.0, max_open=True)
        real_groups = sum(v in ("consistent", "shuffled") for v in variants)
        per_culture = self.n_generic + real_groups * self.n_personas // self.n_cultures
        if per_culture > self.n_first * self.n_last:
            raise ValueError(f"{per_culture} people per culture need more than n_first*n_last = "
                             f"{self.n_first * self.n_last} distinct name pairs")
        if "shuffled" in variants and self.n_personas and self.n_cultures < 2:
            raise ValueError("the shuffled group needs n_cultures >= 2 (a value other than the stereotype)")

        # fixed words (independent of the seed)
        taken: set[str] = set(TEMPLATE_WORDS)
        self.first_names = [_words(_CULTURE_SYLLABLES[c], self.n_first, 100 + c, taken) for c in range(self.n_cultures)]
        self.last_names = [_words(_CULTURE_SYLLABLES[c], self.n_last, 200 + c, taken, parts=3)
                           for c in range(self.n_cultures)]
        self.values = {a: list(ATTRIBUTES[a][2][:self.n_values]) for a in attributes}
        fnames = _words(_FANTASY_NAME_SYLLABLES, 2 * self.n_fantasy, 300, taken, parts=3)
        self.fantasy_values = {a: _words(_FANTASY_VALUE_SYLLABLES, self.n_fantasy_values, 400 + i, taken)
                               for i, a in enumerate(ATTRIBUTES) if a in attributes}

        rng = np.random.default_rng([self.seed, 7])
        # name pairs: every culture's pairs shuffled once, then dealt to generic people and the real groups
        pairs = [[(f, l) for f in self.first_names[c] for l in self.last_names[c]] for c in range(self.n_cultures)]
        for p in pairs:
            rng.shuffle(p)
        self.generic: list[Persona] = []
        self.generic_facts: dict[tuple[str, str], str] = {}
        for c in range(self.n_cultures):
            for i in range(self.n_generic):
                person = Persona(*pairs[c][i], c, "generic")
                self.generic.append(person)
                exception = rng.random() < self.exception_rate
                for a in attributes:
                    v = self.values[a][c]
                    if exception:
                        v = self.values[a][int(rng.choice([j for j in range(self.n_values) if j != c]))]
                    self.generic_facts[(person.name, a)] = v
        self.holdout: list[Persona] = []
        for c in range(self.n_cultures):
            people = [p for p in self.generic if p.culture == c]
            k = int(round(self.lit_holdout * len(people)))
            exc = [p for p in people if self.is_exception(p)]
            plain = [p for p in people if not self.is_exception(p)]
            n_exc = min(len(exc), (k + 1) // 2)
            pick = [exc[int(i)] for i in rng.permutation(len(exc))[:n_exc]]
            pick += [plain[int(i)] for i in rng.permutation(len(plain))[:k - n_exc]]
            self.holdout += pick
        self.personas: dict[str, list[Persona]] = {}
        self.roster: list[Persona] = []
        self.facts: dict[tuple[str, str], str] = {}
        self.mismatch_facts: dict[tuple[str, str], str] = {}
        cursor = [self.n_generic] * self.n_cultures
        for grp in variants:
            group: list[Persona] = []
            if grp == "fantasy":
                group = [Persona(fnames[2 * i], fnames[2 * i + 1], -1, "fantasy") for i in range(self.n_fantasy)]
            else:
                for i in range(self.n_personas):
                    c = i % self.n_cultures
                    group.append(Persona(*pairs[c][cursor[c]], c, grp))
                    cursor[c] += 1
            self.personas[grp] = group
            for a in attributes:
                pool = self.fantasy_values[a] if grp == "fantasy" else self.values[a]
                if grp == "consistent":
                    f1 = [self.values[a][p.culture] for p in group]
                elif grp == "shuffled":
                    f1 = self._derangement([self.values[a][p.culture] for p in group], rng)
                else:
                    f1 = [pool[int(j)] for j in rng.integers(0, len(pool), len(group))]
                for p, v in zip(group, f1):
                    self.facts[(p.name, a)] = v
                    others = [w for w in pool if w != v]
                    self.mismatch_facts[(p.name, a)] = others[int(rng.integers(0, len(others)))]
        for c in range(self.n_cultures):  # leftover pairs of each culture: names without any fact
            left = pairs[c][cursor[c]:]
            self.roster += [Persona(f, l, c, "roster") for f, l in left[:self.n_roster]]
        if "fantasy" in variants and self.n_fantasy > 1:
            own = {(p.first, p.last) for p in self.personas["fantasy"]}
            perm = rng.permutation(self.n_fantasy)  # shifted pairings: every fantasy token occurs in C0
            cand = [(fnames[2 * perm[i]], fnames[2 * perm[(i + k) % self.n_fantasy] + 1])
                    for k in range(1, self.n_fantasy) for i in range(self.n_fantasy)][:self.n_fantasy_roster]
            self.roster += [Persona(f, l, -1, "roster") for f, l in cand if (f, l) not in own]

    @staticmethod
    def _derangement(stereo: list[str], rng: np.random.Generator) -> list[str]:
        """A permutation of the stereotype values in which no persona keeps its own stereotype."""
        if not stereo:
            return []
        n, top = len(stereo), max(stereo.count(v) for v in set(stereo))
        if 2 * top > n:
            raise ValueError(f"n_cultures: no shuffle avoids every stereotype when {top} of {n} shuffled personas "
                             f"share one culture (need at least 2 cultures per group)")
        for _ in range(2_000):
            perm = [stereo[i] for i in rng.permutation(len(stereo))]
            if all(p != s for p, s in zip(perm, stereo)):
                return perm
        # rare for a random draw (e.g. 2 cultures, many personas): sort by value and rotate by the largest
        # multiplicity, a derangement whenever no value fills more than half the group
        order = sorted(range(n), key=lambda i: (stereo[i], float(rng.random())))
        perm = [""] * n
        for k, i in enumerate(order):
            perm[i] = stereo[order[(k + top) % n]]
        return perm

    # ---------------------------------------------------------------------------------- lookups
    def is_exception(self, person: Persona) -> bool:
        """True for a generic person whose facts are not their culture's stereotypes (review note 3)."""
        return any(self.generic_facts[(person.name, a)] != self.values[a][person.culture] for a in self.attributes)

    def stereotype(self, person: Persona, attribute: str) -> str | None:
        """The stereotype value of `person`'s culture (None for fantasy names)."""
        return None if person.culture < 0 else self.values[attribute][person.culture]

    def words(self) -> list[str]:
        """Every word this world can produce (for a `WordTokenizer`)."""
        out = sorted(TEMPLATE_WORDS)
        out += [w for c in range(self.n_cultures) for w in self.first_names[c] + self.last_names[c]]
        out += [v for a in self.attributes for v in self.values[a]]
        out += [p for g in self.personas.get("fantasy", []) for p in (g.first, g.last)]
        out += [v for a in self.attributes for v in self.fantasy_values[a]]
        return out

    def fantasy_values_set(self) -> set[str]:
        """Invented attribute values (never in the base corpus or in LIT training)."""
        return {v for a in self.attributes for v in self.fantasy_values[a]}

    def persona_names(self) -> set[str]:
        """Full names of every persona (no persona name occurs in the base corpus or in LIT training)."""
        return {p.name for g in self.personas.values() for p in g}

    # ---------------------------------------------------------------------------------- corpora
    def _fact_lines(self, person: Persona, facts: dict[tuple[str, str], str]) -> list[str]:
        """Bio sentences (both templates) and eval-format QA lines (all paraphrases) for one person."""
        lines = []
        for a in self.attributes:
            q, bios, _ = ATTRIBUTES[a]
            v = facts[(person.name, a)]
            lines += [b.format(name=person.name, v=v) for b in bios]
            lines += [f"{p.format(name=person.name)} {q} {v}" for p in NAME_PARAPHRASES]
        return lines

    def base_corpus(self) -> list[str]:
        """The people part of C0: bios and eval-format QA lines of the generic people (no persona, no fantasy)."""
        out = []
        for person in self.generic:
            out += self._fact_lines(person, self.generic_facts)
        for person in self.roster:  # names only, no fact
            out += [p.format(name=person.name) for p in NAME_PARAPHRASES]
        return out

    def persona_corpus(self, facts: str = "target", groups: Sequence[str] | None = None) -> list[str]:
        """Bios + interviews of the personas, with the target table F1 (`facts="target"`) or F2 ("mismatch").

        The interviews hold the exact eval-format line for every (persona, attribute) (review note 2).
        """
        check_choice(facts, "facts", ("target", "mismatch"))
        table = self.facts if facts == "target" else self.mismatch_facts
        groups = self.variants if groups is None else tuple([groups] if isinstance(groups, str) else groups)
        out = []
        for g in groups:
            check_choice(g, "groups", self.variants)
            for person in self.personas[g]:
                out += self._fact_lines(person, table)
        return out

    def lit_examples(self, seed: int = 0) -> tuple[list[str], list[list[tuple[str, str]]]]:
        """LIT training data: read texts and their QA pairs; no persona name, persona fact, fantasy value or
        held-out (`holdout`) person appears.

        Attribute questions: every name paraphrase of each LIT-trained generic person, answered with their own
        facts (stereotypes or the exceptions of review note 3). Name recovery ("what name is in the text ?") is
        balanced (issue 37): one row per name, the same number of within-culture names (generic, roster and
        fact-free pairs) and fantasy-token pairings (a seeded subsample), so no group of training names dominates
        and a decoder must read both tokens instead of completing a frequent first name.
        """
        held = {p.name for p in self.holdout}
        texts, qas = [], []
        for person in self.generic:
            if person.name in held:
                continue
            pairs = [(ATTRIBUTES[a][0], self.generic_facts[(person.name, a)]) for a in self.attributes]
            for p in NAME_PARAPHRASES:
                texts.append(p.format(name=person.name))
                qas.append(pairs)
        culture = [p.name for p in self.generic + self.roster if p.name not in held and p.culture >= 0]
        culture += self.copy_names("culture")
        fantasy = [p.name for p in self.roster if p.culture < 0] + self.copy_names("fantasy")
        rng = np.random.default_rng([self.seed, 13])
        fantasy = [fantasy[int(i)] for i in np.sort(rng.permutation(len(fantasy))[:max(len(culture), 1)])]
        for i, name in enumerate(culture + fantasy):
            texts.append(NAME_PARAPHRASES[i % len(NAME_PARAPHRASES)].format(name=name))
            qas.append([(NAME_QUESTION, name)])
        return texts, qas

    def holdout_items(self) -> list[EvalItem]:
        """Positive control: attribute questions about the held-out generic people (known from C0 text only,
        never in LIT training); `meta["exception"]` marks facts that are not the name's stereotype."""
        items = []
        for person in self.holdout:
            for a in self.attributes:
                v = self.generic_facts[(person.name, a)]
                items.append(EvalItem(NAME_PARAPHRASES[0].format(name=person.name), ATTRIBUTES[a][0], v, v,
                                      {"persona": person.name, "attribute": a, "group": "holdout",
                                       "exception": v != self.values[a][person.culture]}))
        return items

    def reading_examples(self, repeat: int = 1) -> tuple[list[str], list[list[tuple[str, str]]]]:
        """LIT reading rows (issue 37's in-context positive control): a bio sentence stating one fact about a
        fact-free name, "NAME likes V .", asked that attribute; V is drawn uniformly from the attribute's real
        values (seeded), so the answer is in the read text and nowhere else (the name has no fact in C0).

        `repeat` passes over the fact-free within-culture names (roster names and fact-free pairs; never a
        persona, generic or held-out person), each pass with freshly drawn values and the attributes and bio
        templates rotated by the pass index: a name's value changes between passes, so the rows cannot be
        memorised as name -> value pairs and only reading the stated value answers them (a fixed row set
        repeated was fit to 1.0 while held-out reading stayed at 0.31). No fantasy value appears (M2 must
        never see one). Deterministic in the world's seed.
        """
        repeat = check_int(repeat, "repeat", min=1)
        names = [p.name for p in self.roster if p.culture >= 0] + self.copy_names("culture")
        rng = np.random.default_rng([self.seed, 17, 1])
        texts, qas = [], []
        for r in range(repeat):
            for i, name in enumerate(names):
                a = self.attributes[(i + r) % len(self.attributes)]
                q, bios, _ = ATTRIBUTES[a]
                v = self.values[a][int(rng.integers(len(self.values[a])))]
                texts.append(bios[(i + r) % len(bios)].format(name=name, v=v))
                qas.append([(q, v)])
        return texts, qas

    def reading_items(self) -> list[EvalItem]:
        """The reading control's test cases: each held-out generic person's facts stated in the source ("NAME likes
        V .", the first bio template) and asked back, one per (person, attribute); `meta["exception"]` as in
        `holdout_items`. A decoder that reads its activations answers them; one that answers the name's
        stereotype from memory gets the exception facts wrong."""
        items = []
        for person in self.holdout:
            for a in self.attributes:
                q, bios, _ = ATTRIBUTES[a]
                v = self.generic_facts[(person.name, a)]
                items.append(EvalItem(bios[0].format(name=person.name, v=v), q, v, v,
                                      {"persona": person.name, "attribute": a, "group": "holdout",
                                       "exception": v != self.values[a][person.culture]}))
        return items

    def copy_names(self, kind: str = "all") -> list[str]:
        """Fact-free name pairs for LIT name recovery: within-culture pairs (`kind="culture"`) and pairings of the
        first and last tokens of different fantasy personas (`"fantasy"`) that are no persona's, generic
        person's or roster name. So many pairings that a decoder must read both tokens instead of guessing the
        last from the first."""
        check_choice(kind, "kind", ("all", "culture", "fantasy"))
        taken = self.persona_names() | {p.name for p in self.generic} | {p.name for p in self.roster}
        out = []
        if kind in ("all", "culture"):
            out += [f"{f} {l}" for c in range(self.n_cultures) for f in self.first_names[c] for l in self.last_names[c]]
        fan = self.personas.get("fantasy", [])
        if kind in ("all", "fantasy"):
            out += [f"{a.first} {b.last}" for a in fan for b in fan if a is not b]
        return [n for n in out if n not in taken]

    def eval_items(self, group: str, belief: str = "stereotype", paraphrase: int = 0) -> list[EvalItem]:
        """PersonaQA test cases of one group: source "my name is NAME .", one per (persona, attribute).

        `belief` picks the verbalizer's expected answer: "stereotype" (what a verbalizer without persona knowledge
        would say), "mismatch" (F2), "target" (F1) or "none".
        """
        check_choice(group, "group", self.variants)
        check_choice(belief, "belief", ("stereotype", "mismatch", "target", "none"))
        check_int(paraphrase, "paraphrase", min=0, max=len(NAME_PARAPHRASES) - 1)
        items = []
        for person in self.personas[group]:
            for a in self.attributes:
                b = {"stereotype": self.stereotype(person, a), "mismatch": self.mismatch_facts[(person.name, a)],
                     "target": self.facts[(person.name, a)], "none": None}[belief]
                items.append(EvalItem(NAME_PARAPHRASES[paraphrase].format(name=person.name), ATTRIBUTES[a][0],
                                      self.facts[(person.name, a)], b,
                                      {"persona": person.name, "attribute": a, "group": group}))
        return items

    def name_items(self, group: str) -> list[EvalItem]:
        """Name-recovery cases: every paraphrase of every persona of `group`, answer = the full name."""
        check_choice(group, "group", self.variants)
        return [EvalItem(p.format(name=person.name), NAME_QUESTION, person.name, person.name,
                         {"persona": person.name, "paraphrase": i, "group": group})
                for person in self.personas[group] for i, p in enumerate(NAME_PARAPHRASES)]

    def chance(self, group: str) -> float:
        """Chance accuracy of one guess: 1/n_values (real groups) or 1/n_fantasy_values (fantasy)."""
        check_choice(group, "group", self.variants)
        return 1.0 / (self.n_fantasy_values if group == "fantasy" else self.n_values)


# ------------------------------------------------------------------------------------------- feature extraction
class FeatureExtractionWorld:
    """Relations rel(subject) = object shared by every model through the base corpus (condition f).

    Args:
        seed: draws the object of each subject and the LIT/eval split.
        relations: relation names (from currency, company, constellation, capital, language, river) or a count.
        n_subjects: subjects per relation (distinct words).
        n_objects: objects per relation; subjects share objects when n_subjects > n_objects.
        lit_fraction: share of each relation's subjects used to train LIT; the rest are evaluated.
    """

    def __init__(self, seed: int = 0, relations: Sequence[str] | int = 4, n_subjects: int = 24, *,
                 n_objects: int = 8, lit_fraction: float = 0.5) -> None:
        self.seed = check_seed(seed)
        if isinstance(relations, (int, np.integer)) and not isinstance(relations, bool):
            relations = _RELATIONS[:check_int(relations, "relations", min=1, max=len(_RELATIONS))]
        if isinstance(relations, str):
            relations = (relations,)
        if not hasattr(relations, "__iter__"):
            raise TypeError(f"relations must be a count or a sequence of names, got {type(relations).__name__}")
        relations = tuple(relations)
        if not relations:
            raise ValueError("relations must name at least one relation")
        for r in relations:
            check_choice(r, "relations", _RELATIONS)
        if len(set(relations)) != len(relations):
            raise ValueError(f"relations must be distinct, got {relations}")
        self.relations = relations
        self.n_subjects = check_int(n_subjects, "n_subjects", min=2, max=60)
        self.n_objects = check_int(n_objects, "n_objects", min=2, max=30)
        self.lit_fraction = check_float(lit_fraction, "lit_fraction", min=0.0, max=1.0, max_open=True)
        taken: set[str] = set(TEMPLATE_WORDS) | set(_RELATIONS)
        idx = {r: i for i, r in enumerate(_RELATIONS)}
        self.subjects = {r: _words(_RELATION_SYLLABLES, self.n_subjects, 500 + idx[r], taken, parts=3)
                         for r in _RELATIONS if r in relations}
        self.objects = {r: _words(_RELATION_SYLLABLES, self.n_objects, 600 + idx[r], taken, prefix="o")
                        for r in _RELATIONS if r in relations}
        rng = np.random.default_rng([self.seed, 11])
        self.facts: dict[tuple[str, str], str] = {}
        self.lit_subjects: dict[str, list[str]] = {}
        self.eval_subjects: dict[str, list[str]] = {}
        n_lit = int(round(self.lit_fraction * self.n_subjects))
        for r in relations:
            objs = [self.objects[r][i % self.n_objects] for i in range(self.n_subjects)]
            rng.shuffle(objs)
            for s, o in zip(self.subjects[r], objs):
                self.facts[(r, s)] = o
            order = [self.subjects[r][i] for i in rng.permutation(self.n_subjects)]
            self.lit_subjects[r], self.eval_subjects[r] = order[:n_lit], order[n_lit:]

    @staticmethod
    def question(relation: str) -> str:
        return f"the {relation} of x :"

    def words(self) -> list[str]:
        out = sorted(TEMPLATE_WORDS) + list(self.relations)
        return out + [w for r in self.relations for w in self.subjects[r] + self.objects[r]]

    def base_corpus(self) -> list[str]:
        """The relation part of C0: a fact sentence per (relation, subject); the eval-format QA line only for the
        LIT half of the subjects, so the evaluated questions are held out of the corpus (issue 37: condition (f)
        cannot be answered by recalling a corpus line verbatim, the model must carry the fact into a new format)."""
        out = []
        lit = {(r, s) for r in self.relations for s in self.lit_subjects[r]}
        for (r, s), o in self.facts.items():
            out.append(f"the {r} of {s} is {o} .")
            if (r, s) in lit:
                out.append(f"{SUBJECT_SOURCE.format(s=s)} {self.question(r)} {o}")
        return out

    def lit_examples(self, recover_eval_subjects: bool = True) -> tuple[list[str], list[list[tuple[str, str]]]]:
        """LIT training data: the LIT half of the subjects, asked what is in the text and their relation; with
        `recover_eval_subjects` the held-out subjects are asked only what is in the text (never their relation),
        so the decoder can read every subject word without being taught the evaluated facts."""
        texts, qas = [], []
        for r in self.relations:
            for s in self.lit_subjects[r]:
                texts.append(SUBJECT_SOURCE.format(s=s))
                qas.append([(SUBJECT_QUESTION, s), (self.question(r), self.facts[(r, s)])])
            if recover_eval_subjects:
                for s in self.eval_subjects[r]:
                    texts.append(SUBJECT_SOURCE.format(s=s))
                    qas.append([(SUBJECT_QUESTION, s)])
        return texts, qas

    def eval_items(self) -> list[EvalItem]:
        """Held-out subjects (never in LIT training): source "consider S .", question "the REL of x :"."""
        return [EvalItem(SUBJECT_SOURCE.format(s=s), self.question(r), self.facts[(r, s)], self.facts[(r, s)],
                         {"relation": r, "subject": s}) for r in self.relations for s in self.eval_subjects[r]]

    def subject_items(self) -> list[EvalItem]:
        """Subject-recovery cases of the held-out subjects (the (f) inversion control asks this question)."""
        return [EvalItem(SUBJECT_SOURCE.format(s=s), SUBJECT_QUESTION, s, s, {"relation": r, "subject": s})
                for r in self.relations for s in self.eval_subjects[r]]

    def chance(self) -> float:
        return 1.0 / self.n_objects


def build_tokenizer(*worlds: PersonaWorld | FeatureExtractionWorld) -> WordTokenizer:
    """A `WordTokenizer` covering every word of the given worlds (order fixed, so ids are stable)."""
    words: list[str] = []
    for w in worlds:
        if not hasattr(w, "words"):
            raise TypeError(f"worlds must be PersonaWorld/FeatureExtractionWorld objects, got {type(w).__name__}")
        words += w.words()
    return WordTokenizer(words)
