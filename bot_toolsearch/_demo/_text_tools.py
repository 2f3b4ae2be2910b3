"""``text.*`` demo tools: string utilities, hashing and encodings, really computed."""

from __future__ import annotations

import base64
import binascii
import codecs
import hashlib
import json
import re
import unicodedata
import uuid
from typing import Literal
from urllib.parse import quote, unquote

from bot_toolsearch._tools.tool import Tool, tool

__all__ = ["TEXT_TOOLS"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"https?://[^\s<>\"']+")


@tool(name="text.word_count")
def word_count(text: str) -> dict[str, int]:
    """Count the words, characters and lines in a text (CJK characters count as words).

    Args:
        text: the text to count.
    """
    words = re.findall(r"[\u4e00-\u9fff]|[^\W_]+(?:'[^\W_]+)?", text)
    return {"words": len(words), "characters": len(text), "lines": len(text.splitlines()) or 1}


@tool(name="text.reverse")
def reverse(text: str) -> str:
    """Reverse a string character by character.

    Args:
        text: the text to reverse.
    """
    return text[::-1]


@tool(name="text.change_case")
def change_case(text: str, case: Literal["upper", "lower", "title", "swap"]) -> str:
    """Convert text to upper case, lower case, title case or swapped case.

    Args:
        text: the text.
        case: upper, lower, title or swap.
    """
    return {"upper": text.upper, "lower": text.lower, "title": text.title, "swap": text.swapcase}[
        case
    ]()


@tool(name="text.slugify")
def slugify(text: str) -> str:
    """Turn a title into a URL slug (lower case ASCII words joined by hyphens).

    Args:
        text: the title, e.g. "Hello, World!".
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


@tool(name="text.base64_encode")
def base64_encode(text: str) -> str:
    """Encode UTF-8 text as Base64.

    Args:
        text: the text to encode.
    """
    return base64.b64encode(text.encode()).decode()


@tool(name="text.base64_decode")
def base64_decode(data: str) -> str:
    """Decode Base64 back to UTF-8 text.

    Args:
        data: the Base64 string.
    """
    try:
        return base64.b64decode(data.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError("not valid Base64 of UTF-8 text") from exc


@tool(name="text.hash")
def hash_text(text: str, algorithm: Literal["md5", "sha1", "sha256", "sha512"] = "sha256") -> str:
    """Compute the MD5, SHA-1, SHA-256 or SHA-512 hex digest (checksum) of a text.

    Args:
        text: the text to hash (UTF-8).
        algorithm: md5, sha1, sha256 or sha512.
    """
    return hashlib.new(algorithm, text.encode()).hexdigest()


@tool(name="text.url_encode")
def url_encode(text: str) -> str:
    """Percent-encode text for use in a URL.

    Args:
        text: the text to encode.
    """
    return quote(text, safe="")


@tool(name="text.url_decode")
def url_decode(text: str) -> str:
    """Decode a percent-encoded URL component.

    Args:
        text: the encoded text, e.g. hello%20world.
    """
    return unquote(text)


@tool(name="text.find_replace")
def find_replace(text: str, find: str, replace: str) -> str:
    """Replace every occurrence of a substring in a text.

    Args:
        text: the text to edit.
        find: the substring to look for.
        replace: the replacement.
    """
    return text.replace(find, replace)


@tool(name="text.extract_emails")
def extract_emails(text: str) -> list[str]:
    """Extract all email addresses found in a text.

    Args:
        text: the text to scan.
    """
    return _EMAIL.findall(text)


@tool(name="text.extract_urls")
def extract_urls(text: str) -> list[str]:
    """Extract all http and https links found in a text.

    Args:
        text: the text to scan.
    """
    return _URL.findall(text)


@tool(name="text.is_palindrome")
def is_palindrome(text: str) -> bool:
    """Check whether a text reads the same backwards, ignoring case, spaces and punctuation.

    Args:
        text: the text to check.
    """
    letters = [c.casefold() for c in text if c.isalnum()]
    return bool(letters) and letters == letters[::-1]


@tool(name="text.edit_distance")
def edit_distance(first: str, second: str) -> int:
    """Compute the Levenshtein edit distance between two strings (similarity of spellings).

    Args:
        first: first string.
        second: second string.
    """
    previous = list(range(len(second) + 1))
    for i, a in enumerate(first, 1):
        current = [i]
        for j, b in enumerate(second, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


@tool(name="text.truncate")
def truncate(text: str, max_length: int = 80) -> str:
    """Shorten a text to a maximum length, adding an ellipsis when cut.

    Args:
        text: the text.
        max_length: maximum number of characters of the result.
    """
    return text if len(text) <= max_length else text[: max(max_length - 1, 0)] + "…"


@tool(name="text.count_occurrences")
def count_occurrences(text: str, substring: str) -> int:
    """Count how many times a substring occurs in a text (case-insensitive).

    Args:
        text: the text to search.
        substring: what to count.
    """
    return text.casefold().count(substring.casefold()) if substring else 0


@tool(name="text.rot13")
def rot13(text: str) -> str:
    """Apply the ROT13 letter substitution cipher (encoding and decoding are the same).

    Args:
        text: the text.
    """
    return codecs.encode(text, "rot13")


@tool(name="text.uuid_from_name")
def uuid_from_name(name: str) -> str:
    """Make a deterministic UUID (version 5, URL namespace) from a name.

    Args:
        name: any name or URL.
    """
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


@tool(name="text.format_json")
def format_json(document: str, indent: int = 2) -> str:
    """Validate and pretty-print a JSON document.

    Args:
        document: the JSON text.
        indent: spaces per indentation level.
    """
    return json.dumps(json.loads(document), indent=indent, ensure_ascii=False, sort_keys=True)


@tool(name="text.char_info")
def char_info(character: str) -> dict[str, str]:
    """Look up the Unicode code point, name and category of a character.

    Args:
        character: a single character, e.g. é or 群.
    """
    if len(character) != 1:
        raise ValueError("give exactly one character")
    return {
        "character": character,
        "code_point": f"U+{ord(character):04X}",
        "name": unicodedata.name(character, "unknown"),
        "category": unicodedata.category(character),
    }


TEXT_TOOLS: tuple[Tool, ...] = (
    word_count,
    reverse,
    change_case,
    slugify,
    base64_encode,
    base64_decode,
    hash_text,
    url_encode,
    url_decode,
    find_replace,
    extract_emails,
    extract_urls,
    is_palindrome,
    edit_distance,
    truncate,
    count_occurrences,
    rot13,
    uuid_from_name,
    format_json,
    char_info,
)
