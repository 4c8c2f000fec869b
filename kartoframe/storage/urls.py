"""Store URLs and storage options: what a URL carries, and how both are shown.

Passwords in URLs (``proto://user:password@host/...``), secret-looking query values
(``?sig=...``) and options under secret-looking names (``key``, ``secret``, ``token``...)
never appear in a ``repr`` or an error message: :func:`redact_url`, :func:`redact_options`
and :func:`secret_values` (the strings to hide in third-party messages).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import fsspec

__all__ = [
    "filesystem_class",
    "is_secret",
    "is_secret_param",
    "redact_options",
    "redact_url",
    "secret_values",
    "url_options",
    "url_password",
    "url_secrets",
]

#: Option names holding any of these words hold secrets.
_SECRET_WORDS = (
    "key",
    "secret",
    "token",
    "pass",
    "credential",
    "sas",
    "signature",
    "connection_string",
    "auth",
    "private",
)


def is_secret(name: object) -> bool:
    """Whether an option name looks like it holds a secret (key, token...)."""
    low = str(name).lower()
    return any(w in low for w in _SECRET_WORDS)


def is_secret_param(name: str) -> bool:
    """Whether a URL query parameter holds a secret (``sig`` of an Azure SAS URL...)."""
    return is_secret(name) or name.lower() == "sig"


def redact_options(value: Any) -> Any:
    """A copy of storage options with every secret-looking value replaced by ``***``.

    Values under a secret-looking name (``key``, ``secret``, ``token``, ``pass``...) at any
    depth are replaced; URLs anywhere (``endpoint_url``, proxies) lose their password.
    """
    if isinstance(value, dict):
        return {k: "***" if is_secret(k) else redact_options(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_options(v) for v in value)
    if isinstance(value, str):
        return redact_url(value)
    return value


def secret_values(value: Any, inside_secret: bool = False) -> list[str]:
    """Every string stored under a secret-looking option name (recursively)."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += secret_values(v, inside_secret or is_secret(k))
    elif isinstance(value, list | tuple):
        for v in value:
            out += secret_values(v, inside_secret)
    elif isinstance(value, str | bytes) and value:
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        if inside_secret:
            out.append(text)
        out += url_secrets(text)  # a password or signature inside a URL, at any depth
    return out


def url_secrets(text: str) -> list[str]:
    """The password and secret-looking query values of a URL (e.g. a proxy URL)."""
    if "://" not in text:
        return []
    out = [pw] if (pw := url_password(text)) else []
    try:
        query = urlsplit(text).query
    except ValueError:
        return out
    for name, _, val in (part.partition("=") for part in query.split("&")):
        if val and is_secret_param(name):
            out.append(val)
    return out


def redact_url(url: str) -> str:
    """Hide a URL's password (``proto://user:password@host/...``) and secret values.

    Values of secret-looking query parameters (``?sig=...``, ``?token=...``) are hidden too.
    """
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    netloc, sep, path = rest.partition("/")
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    if "?" in path:
        path, query = path.split("?", 1)
        parts = [p.partition("=") for p in query.split("&")]
        path += "?" + "&".join(
            f"{n}{eq}***" if v and is_secret_param(n) else f"{n}{eq}{v}" for n, eq, v in parts
        )
    return f"{scheme}://{netloc}{sep}{path}"


def url_password(url: str) -> str | None:
    """The password of a URL (None: none, or not a URL)."""
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def filesystem_class(protocol: str) -> Any:
    """The fsspec filesystem class of a protocol."""
    return fsspec.get_filesystem_class(protocol)


def url_options(protocol: str, url: str) -> dict[str, Any]:
    """Filesystem options a URL carries in its authority (``user:pw@host:port``).

    Only looked at when the URL has user info or a port, so plain object-store URLs
    (``s3://bucket/prefix``) do not import their filesystem here.
    """
    netloc = url.split("://", 1)[1].split("/", 1)[0]
    if "@" not in netloc and ":" not in netloc:
        return {}
    try:
        options = filesystem_class(protocol)._get_kwargs_from_urls(url)
    except Exception:  # an implementation that cannot parse its own URLs: no options
        return {}
    return dict(options) if isinstance(options, dict) else {}
