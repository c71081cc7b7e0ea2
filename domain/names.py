"""Names that identify someone in the record (token names, context `actor` and `sandbox`): what
makes two of them the same, and the characters they may not hold.

- **Default-ignorable characters are refused.** They render as nothing (zero-width space and
  joiners, bidi controls, variation selectors, Hangul fillers, tag characters), so `al\\u200bice`
  reads as `alice` and `c\\u200bli:bob` as the CLI's own `cli:bob`. The rule: general category
  Cf (format characters) plus Unicode's Default_Ignorable_Code_Point ranges (_IGNORABLE below,
  from DerivedCoreProperties.txt), which add the few that are not Cf.
- **Names compare by skeleton**, in the spirit of UTS #39's confusable detection: NFKC (fullwidth,
  ligature and mathematical forms become plain letters), then capitals of other scripts that look
  like Latin capitals become those capitals, then case folding, then small letters of other
  scripts that look like Latin small letters (and the digits 0 and 1) become those letters, and
  every dash the hyphen-minus. Two
  names with one skeleton look the same, so the second is refused. The table is a compact one,
  not Unicode's whole confusables.txt: the Cyrillic and Greek letters that look like Latin ones
  in common fonts, which is how a look-alike name is usually made. Latin letters that resemble
  each other (`I` and `l`, `rn` and `m`) stay distinct, as case-insensitive names need.
"""

from __future__ import annotations

import unicodedata

from domain.errors import FieldError, InvalidInputError

# Default_Ignorable_Code_Point (Unicode 15.1 DerivedCoreProperties.txt), inclusive ranges.
_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
IGNORABLE_RULE = (
    "must not contain invisible characters (Unicode format or default-ignorable, such as zero-width spaces)"
)

# Capitals (Cyrillic, Greek) drawn like Latin capitals: mapped before case folding, since their
# small forms mostly look like nothing Latin (Greek Η is H, its η is n).
_CAPITALS = str.maketrans(
    "АВЕЅІЈКМНОРСТХУΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "ABESIJKMHOPCTXYABEZHIKMNOPTYX",
)
# Small letters (Cyrillic, Greek, Latin extensions) drawn like Latin small letters, and the
# digits UTS #39 counts as letters; after case folding.
_SMALL = str.maketrans(
    "аеорсухѕіјԁһԛԝӏɡαοιρνυκɑɩı01",
    "aeopcyxsijdhqwlgaoipvukaiiol",
    "\u0307",  # the dot case folding leaves on an i (İ folds to i and this dot): an i still
)


def is_ignorable(char: str) -> bool:
    if unicodedata.category(char) == "Cf":
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in _IGNORABLE)


def check_visible(value: str, field: str) -> str:
    """Refuse a name holding a character that renders as nothing (the rule above)."""
    hidden = next((c for c in value if is_ignorable(c)), None)
    if hidden is not None:
        rule = f"{IGNORABLE_RULE}; found U+{ord(hidden):04X}"
        raise InvalidInputError(f"{field} {rule}", [FieldError(field, rule)])
    return value


def skeleton(name: str) -> str:
    """What a name looks like: two names with one skeleton are confusable (see the module)."""
    visible = "".join(_dash(c) for c in unicodedata.normalize("NFKC", name) if not is_ignorable(c))
    return visible.translate(_CAPITALS).casefold().translate(_SMALL).strip()


def _dash(char: str) -> str:
    """Every dash (U+2010 and its kin, which NFKC keeps) is drawn as the hyphen-minus."""
    return "-" if unicodedata.category(char) == "Pd" else char
