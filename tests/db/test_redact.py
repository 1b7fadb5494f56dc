"""`db.backend.redact`: every secret of a database URL is masked (the password of
`user:secret@host`, the `password` and `sslpassword` parameters) and nothing else changes."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st

from db.backend import redact

# Secrets always hold a capital letter, and nothing else in a generated URL does: a secret
# found in the output cannot be an accident of the other parts.
_CAPITAL = st.sampled_from(string.ascii_uppercase)
_SECRET_CHARS = st.sampled_from([*string.ascii_uppercase, *"0123456789-._~!$'()*+,;=:@", "%2F"])
_PLAIN_CHARS = st.sampled_from([*string.ascii_lowercase, *"0123456789-._~", "%2f", "%40"])


def _secret(at_ok: bool) -> st.SearchStrategy[str]:
    chars = _SECRET_CHARS if at_ok else _SECRET_CHARS.filter(lambda c: c not in "@")
    return st.builds(lambda a, b: a + "".join(b), _CAPITAL, st.lists(chars, max_size=12))


_plain = st.lists(_PLAIN_CHARS, min_size=1, max_size=8).map("".join)
_host = st.one_of(
    st.just(""),
    st.builds(lambda h, p: h + p, _plain, st.sampled_from(["", ":5432", ":1"])),
    st.just("[::1]:5433"),
    st.just("h1:5432,h2"),
)
_OTHER_KEYS = ("sslmode", "host", "application_name", "connect_timeout", "passfile", "user")


@st.composite
def _url(draw: st.DrawFn, secrets: bool) -> tuple[str, str, list[str]]:
    """(a URL, the same URL with each secret as ***, its secrets)."""
    found: list[str] = []
    scheme = draw(st.sampled_from(["postgresql://", "postgres://"]))
    user = draw(st.one_of(st.just(""), _plain))
    auth = auth_masked = ""
    if user:
        auth = auth_masked = user
        if secrets and draw(st.booleans()):
            secret = draw(_secret(at_ok=True))
            found.append(secret)
            auth, auth_masked = f"{user}:{secret}", f"{user}:***"
        auth, auth_masked = auth + "@", auth_masked + "@"
    host = draw(_host)
    path = draw(st.sampled_from(["", "/", "/bot", "/r10"]))
    params: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 4))):
        if secrets and draw(st.booleans()):
            key = draw(st.sampled_from(["password", "sslpassword"]))
            # Without '@': libpq reads a query holding one, with no path before it, as a
            # user:password@ part (the redaction masks both readings, so the output differs).
            secret = draw(_secret(at_ok=False))
            found.append(secret)
            params.append((f"{key}={secret}", f"{key}=***"))
        else:
            key = draw(st.sampled_from(_OTHER_KEYS))
            value = draw(st.one_of(st.just(""), _plain, st.just("/run/postgresql")))
            params.append((f"{key}={value}",) * 2)
    query = query_masked = ""
    empty_query: bool = draw(st.booleans())  # `?` alone is a shape too
    if params or empty_query:
        query = "?" + "&".join(p for p, _ in params)
        query_masked = "?" + "&".join(m for _, m in params)
    url = f"{scheme}{auth}{host}{path}{query}"
    return url, f"{scheme}{auth_masked}{host}{path}{query_masked}", found


@given(_url(secrets=True))
def test_every_secret_is_masked_and_nothing_else_changes(case: tuple[str, str, list[str]]) -> None:
    url, masked, secrets = case
    out = redact(url)
    assert out == masked
    for secret in secrets:
        assert secret not in out


@given(_url(secrets=False))
def test_a_url_without_secrets_comes_out_unchanged(case: tuple[str, str, list[str]]) -> None:
    url, _, _ = case
    assert redact(url) == url


def test_the_shapes_the_old_redaction_broke() -> None:
    assert redact("postgresql:///r10?host=/tmp") == "postgresql:///r10?host=/tmp"
    assert redact("postgresql://u@h/d?sslpassword=zz") == "postgresql://u@h/d?sslpassword=***"
    assert redact("postgresql://u:p@h/d?password=q&sslmode=require") == (
        "postgresql://u:***@h/d?password=***&sslmode=require"
    )
    # A password with an unescaped '?', '#' or '@' (libpq reads up to the last '@' before '/').
    assert redact("postgresql://u:p?w#d@h/d") == "postgresql://u:***@h/d"
    assert redact("postgresql://u:p@ss@h/d") == "postgresql://u:***@h/d"
    # A host with no path before the query, a parameter name written with an escape.
    assert redact("postgresql://h?password=a@b") == "postgresql://h?password=***"
    assert redact("postgresql://h/d?pass%77ord=x") == "postgresql://h/d?pass%77ord=***"
    assert redact("postgresql://u:@h/d?password=") == "postgresql://u:@h/d?password="
    assert redact("mysql://bot:pw@h/b") == "mysql://bot:***@h/b"
    assert redact("data/boardbot.db") == "data/boardbot.db"
    assert redact("postgresql://u:p@[::1/bot") == "postgresql://u:***@[::1/bot"
