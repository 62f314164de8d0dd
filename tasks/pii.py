"""Personal data in free text: e-mail addresses, phone numbers, street addresses; and their redaction."""

from __future__ import annotations

import re

# Personal data. Python regexes (GX's pandas engine applies them with Series.str.contains).
EMAIL_RE = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
PHONE_RE = (  # +country numbers, (415) 555-0133, 415-555-0133, 555-0133, 4155550133; never "988"
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?(?:\(\d{1,4}\)[\s.-]?)?\d(?:[\s.-]?\d){5,13}"
    r"|(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]\d{3,4}"
    r"|\d{3}[\s.-]\d{4}|\d{10,11})(?![\w])"
)
ADDRESS_RE = (  # "42 Baker Street", "1600 Pennsylvania Ave"
    r"\b\d{1,5}\s+(?:[A-Z][A-Za-z'-]*\s+){1,3}(?:[Ss]treet|St|[Aa]venue|Ave|[Rr]oad|Rd|[Bb]oulevard|Blvd"
    r"|[Ll]ane|Ln|[Dd]rive|Dr|[Cc]ourt|Ct|[Pp]lace|Pl|[Tt]errace|[Ss]quare|[Hh]ighway|Hwy)\b"
)
PII_PATTERNS: dict[str, str] = {"e-mail address": EMAIL_RE, "phone number": PHONE_RE, "street address": ADDRESS_RE}
_PII_MASKS = {"e-mail address": "[EMAIL]", "phone number": "[PHONE]", "street address": "[ADDRESS]"}


def redact_pii(text: str) -> str:
    """Replace e-mail addresses, phone numbers and street addresses with [EMAIL], [PHONE], [ADDRESS]."""
    for kind, pattern in PII_PATTERNS.items():
        text = re.sub(pattern, _PII_MASKS[kind], text)
    return text
