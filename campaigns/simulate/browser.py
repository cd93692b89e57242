"""A small HTTP client that behaves like one browser: cookies, redirects, CSRF.

Standard library only (``urllib.request`` + ``http.cookiejar``). Every answer,
whatever its status, comes back as a ``Page``; nothing raises on 4xx or 5xx.
"""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass
from typing import Any

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken"\s+value="([^"]+)"')
_ASSET = re.compile(r'(?:src|href)="(/[^"]*static/[^"]+)"')


class _LoopbackSecurePolicy(http.cookiejar.DefaultCookiePolicy):
    """Return ``Secure`` cookies to loopback hosts over plain HTTP, as browsers do
    (http://localhost is a secure context), so a server with secure cookies on
    (``DEBUG`` off) can be driven through the in-process server."""

    def return_ok_secure(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        host = urllib.parse.urlsplit(request.get_full_url()).hostname or ""
        return host in LOOPBACK_HOSTS or super().return_ok_secure(cookie, request)


class _OffsiteRedirect(Exception):
    """Raised by ``_SameSiteRedirects`` to end a request at an off-site redirect."""

    def __init__(self, url: str, code: int) -> None:
        super().__init__(url)
        self.url = url
        self.code = code


class _SameSiteRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects on the site; stop at one that leaves it (a platform's completion
    URL): the browser reports it instead of loading another site."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        here = urllib.parse.urlsplit(req.full_url).netloc
        if urllib.parse.urlsplit(newurl).netloc != here:
            fp.close()
            raise _OffsiteRedirect(newurl, code)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass
class Page:
    """One response after redirects: final URL, status and body text (status 0 when
    the server gave no HTTP answer; ``text`` then says why)."""

    url: str
    status: int
    text: str
    method: str
    requested: str
    # A redirect off the site, not followed: ``url`` is where it pointed, ``status`` its code.
    offsite: bool = False

    @property
    def path(self) -> str:
        return urllib.parse.urlsplit(self.url).path

    def csrf_token(self) -> str | None:
        found = _CSRF_INPUT.search(self.text)
        return found.group(1) if found else None

    def assets(self) -> list[str]:
        """Static files the page loads (scripts, style sheets), as paths."""
        return sorted(set(_ASSET.findall(self.text)))


class Browser:
    """One simulated browser: its own cookie jar (so its own session and worker)."""

    def __init__(self, *, base_url: str, timeout: float = 30.0) -> None:
        if urllib.parse.urlsplit(base_url).scheme not in {"http", "https"}:
            raise ValueError(f"The base URL must be http(s)://..., got {base_url!r}.")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.cookies = http.cookiejar.CookieJar(policy=_LoopbackSecurePolicy())
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), _SameSiteRedirects()
        )
        self.requests = 0
        self.statuses: Counter[int] = Counter()

    def url(self, path: str) -> str:
        """``path`` on this site; absolute URLs (redirect targets) only if http(s)."""
        return path if path.startswith(("http://", "https://")) else self.base_url + path

    def csrf_cookie(self) -> str | None:
        return next((c.value for c in self.cookies if c.name == "csrftoken"), None)

    def get(self, path: str) -> Page:
        # The scheme is http(s): __init__ checks the base URL, and paths are joined to it.
        return self._open(urllib.request.Request(self.url(path), method="GET"))  # noqa: S310

    def post(
        self, path: str, fields: dict[str, list[str]], *, csrf: str | None, referer: str
    ) -> Page:
        """POST ``fields`` (repeated keys for lists) with the CSRF token, like a form."""
        pairs = [(name, value) for name, values in fields.items() for value in values]
        token = csrf or self.csrf_cookie()
        if token:
            pairs.append(("csrfmiddlewaretoken", token))
        body = urllib.parse.urlencode(pairs).encode()
        split = urllib.parse.urlsplit(self.base_url)
        request = urllib.request.Request(  # noqa: S310 (http(s) only, as in get)
            self.url(path),
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": f"{split.scheme}://{split.netloc}",
                "Referer": self.url(referer),
            },
        )
        return self._open(request)

    def _open(self, request: urllib.request.Request) -> Page:
        self.requests += 1
        page = self._fetch(request)
        self.statuses[page.status] += 1
        return page

    def _fetch(self, request: urllib.request.Request) -> Page:
        method = request.get_method()
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return Page(
                    url=response.geturl(),
                    status=response.status,
                    text=response.read().decode("utf-8", "replace"),
                    method=method,
                    requested=request.full_url,
                )
        except _OffsiteRedirect as exc:
            return Page(
                url=exc.url,
                status=exc.code,
                text="",
                method=method,
                requested=request.full_url,
                offsite=True,
            )
        except urllib.error.HTTPError as exc:
            text = exc.read().decode("utf-8", "replace") if exc.fp is not None else ""
            return Page(
                url=exc.geturl() or request.full_url,
                status=exc.code,
                text=text,
                method=method,
                requested=request.full_url,
            )
        except (urllib.error.URLError, OSError) as exc:
            # No HTTP answer at all (refused, reset, timed out): status 0.
            reason = getattr(exc, "reason", exc)
            return Page(
                url=request.full_url,
                status=0,
                text=str(reason),
                method=method,
                requested=request.full_url,
            )
