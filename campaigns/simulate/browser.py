"""A small HTTP client that behaves like one browser: cookies, redirects, CSRF.

Standard library only (``urllib.request`` + ``http.cookiejar``). Every answer,
whatever its status, comes back as a ``Page``; nothing raises on 4xx or 5xx.

Over HTTP to any server (``base_url``), or, given a WSGI ``app``, in process: the
request goes through the app's whole stack (middleware, views, templates, the request
signals) as a WSGI server would call it, without a socket, a server thread or HTTP
parsing in between (``WSGITransport``).
"""

from __future__ import annotations

import email.message
import functools
import http.cookiejar
import io
import logging
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
# A Set-Cookie's expiry attributes (with the separator before them).
_EXPIRY = re.compile(r";\s*(?:expires|max-age)=[^;]*", re.IGNORECASE)
# What ``urllib.parse.quote_plus`` leaves as it is (its always-safe characters).
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")
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
    URL): the browser reports it instead of loading another site. Counts the redirects
    it follows (each is one more request to the server)."""

    followed = 0

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
        followed = super().redirect_request(req, fp, code, msg, headers, newurl)
        if followed is not None:
            self.followed += 1
        return followed


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


@functools.lru_cache(maxsize=4096)
def _quoted_name(name: str) -> str:
    return urllib.parse.quote_plus(name)


def form_encode(pairs: Iterable[tuple[str, str]]) -> str:
    """``urllib.parse.urlencode(pairs)`` for text pairs, the same string: field names
    (a form's few, repeated on every post) quoted once, and values that need no quoting
    (ids, numbers, words) taken as they are."""
    return "&".join(
        f"{_quoted_name(name)}="
        f"{value if _UNQUOTED.fullmatch(value) else urllib.parse.quote_plus(value)}"
        for name, value in pairs
    )


class Browser:
    """One simulated browser: its own cookie jar (so its own session and worker)."""

    def __init__(self, *, base_url: str, timeout: float = 30.0, app: WSGIApp | None = None) -> None:
        if urllib.parse.urlsplit(base_url).scheme not in {"http", "https"}:
            raise ValueError(f"The base URL must be http(s)://..., got {base_url!r}.")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.cookies = http.cookiejar.CookieJar(policy=_LoopbackSecurePolicy())
        self._redirects = _SameSiteRedirects()
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), self._redirects
        )
        self._transport = None if app is None else WSGITransport(app, self.cookies)
        # Pages loaded (a GET or a POST, with the redirects it led to), and their
        # statuses; ``requests`` counts every HTTP request, each redirect followed too.
        self.pages = 0
        self.statuses: Counter[int] = Counter()

    @property
    def requests(self) -> int:
        """HTTP requests sent: one per page, plus one per redirect followed."""
        if self._transport is not None:
            return self._transport.calls
        return self.pages + self._redirects.followed

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
        body = form_encode(pairs).encode()
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
        self.pages += 1
        page = self._fetch(request)
        self.statuses[page.status] += 1
        return page

    def _fetch(self, request: urllib.request.Request) -> Page:
        if self._transport is not None:
            return self._transport.fetch(request)
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


# What urllib sends with every request (``OpenerDirector.addheaders``, ``do_request_``).
_USER_AGENT = f"Python-urllib/{sys.version_info.major}.{sys.version_info.minor}"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# urllib follows at most this many redirects (``HTTPRedirectHandler.max_redirections``).
_MAX_REDIRECTS = 10


class _Response:
    """The little of a urllib response that ``CookieJar.extract_cookies`` reads."""

    def __init__(self, headers: list[tuple[str, str]]) -> None:
        self._message = email.message.Message()
        for name, value in headers:
            self._message[name] = value

    def info(self) -> email.message.Message:
        return self._message


class WSGITransport:
    """Requests handed to a WSGI app in the calling thread, as a WSGI server would hand
    them (PEP 3333 environ, ``start_response``, the body iterated and closed so that the
    request signals run), with the same cookies, redirects and answers as the HTTP path
    through urllib: what the app sees differs only in having no socket behind it."""

    def __init__(self, app: WSGIApp, cookies: http.cookiejar.CookieJar) -> None:
        self.app = app
        self.cookies = cookies
        self.calls = 0  # requests handed to the app, redirects followed included
        # The Cookie header the jar last wrote for a site (scheme, host): valid until
        # the jar changes or its first cookie expires, when every cookie is site-wide
        # (path "/"), so that it is the same for every path (``_cookie_header``).
        self._cookie_header: dict[tuple[str, str], tuple[str | None, float]] = {}
        # The Set-Cookie headers last read into the jar, without their expiry
        # (``_renewal``), and when the first cookie then in the jar expires.
        self._set_cookies: tuple[str, ...] = ()
        self._jar_expires = float("inf")

    def _add_cookie_header(self, request: urllib.request.Request) -> None:
        """``CookieJar.add_cookie_header``, its answer kept per site while it holds: the
        jar's policy checks took longer than the app's own request set-up."""
        split = urllib.parse.urlsplit(request.full_url)
        key = (split.scheme, split.netloc)
        found = self._cookie_header.get(key)
        if found is not None and time.time() < found[1]:
            if found[0] is not None:
                request.add_unredirected_header("Cookie", found[0])
            return
        self.cookies.add_cookie_header(request)
        cookies = list(self.cookies)
        if all(cookie.path == "/" for cookie in cookies):
            expires = min((c.expires for c in cookies if c.expires is not None), default=None)
            until = float(expires) if expires is not None else float("inf")
            self._cookie_header[key] = (request.get_header("Cookie"), until)

    def fetch(self, request: urllib.request.Request) -> Page:
        method, requested = request.get_method(), request.full_url

        def page(url: str, status: int, body: bytes, *, offsite: bool = False) -> Page:
            text = "" if offsite else body.decode("utf-8", "replace")
            return Page(
                url=url, status=status, text=text, method=method, requested=requested,
                offsite=offsite,
            )  # fmt: skip

        for _ in range(_MAX_REDIRECTS + 1):
            status, headers, body = self._call(request)
            location = next((v for k, v in headers if k.lower() == "location"), None)
            if status not in _REDIRECTS or location is None:
                return page(request.full_url, status, body)
            target = urllib.parse.urljoin(request.full_url, location)
            here = urllib.parse.urlsplit(request.full_url).netloc
            if urllib.parse.urlsplit(target).netloc != here:
                return page(target, status, body, offsite=True)
            if status in (307, 308) and request.get_method() not in ("GET", "HEAD"):
                # urllib does not re-send a body on a redirect: an HTTPError.
                return page(request.full_url, status, body)
            # As urllib: the next request is a GET with the same headers but the body's.
            headers_kept = {
                k: v
                for k, v in request.headers.items()
                if k.lower() not in ("content-length", "content-type")
            }
            request = urllib.request.Request(  # noqa: S310 (on this site: checked above)
                target, headers=headers_kept, method="GET"
            )
        return page(request.full_url, status, body)

    def _call(self, request: urllib.request.Request) -> tuple[int, list[tuple[str, str]], bytes]:
        self.calls += 1
        self._add_cookie_header(request)
        split = urllib.parse.urlsplit(request.full_url)
        body = request.data if isinstance(request.data, bytes) else b""
        environ: dict[str, Any] = {
            "REQUEST_METHOD": request.get_method(),
            "SCRIPT_NAME": "",
            "PATH_INFO": urllib.parse.unquote(split.path or "/", "iso-8859-1"),
            "QUERY_STRING": split.query,
            "SERVER_NAME": split.hostname or "127.0.0.1",
            "SERVER_PORT": str(split.port or (443 if split.scheme == "https" else 80)),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": str(len(body)) if body else "",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": split.scheme,
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "HTTP_HOST": split.netloc,
            "HTTP_USER_AGENT": _USER_AGENT,
            "HTTP_ACCEPT_ENCODING": "identity",
            "HTTP_CONNECTION": "close",
        }
        for name, value in request.header_items():
            key = name.upper().replace("-", "_")
            if key == "CONTENT_TYPE":
                environ["CONTENT_TYPE"] = value
            elif key not in ("HOST", "CONTENT_LENGTH"):
                environ[f"HTTP_{key}"] = value
        started: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None):
            started[:] = [int(status.split(" ", 1)[0]), headers]
            return lambda data: None  # the legacy write(): Django never calls it

        try:
            result = self.app(environ, start_response)
            try:
                body_out = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        except Exception:
            # What a WSGI server answers when the app itself raises (wsgiref: a 500).
            logger.exception("The app raised on %s %s", environ["REQUEST_METHOD"], split.path)
            return 500, [], b"A server error occurred."
        status, headers = started
        set_cookies = tuple(value for name, value in headers if name.lower() == "set-cookie")
        # The same cookies set again (Django renews the CSRF cookie on every page with a
        # form, its expiry a year on from now) leave the jar as it is but for their
        # expiry: read only what changed (``_renewal``).
        if set_cookies and not self._renewal(set_cookies):
            self.cookies.extract_cookies(_Response(headers), request)  # type: ignore[arg-type]
            self._cookie_header.clear()
            self._set_cookies = tuple(_EXPIRY.sub("", value) for value in set_cookies)
            expiries = [c.expires for c in self.cookies if c.expires is not None]
            self._jar_expires = float(min(expiries)) if expiries else float("inf")
        return status, headers, body_out

    def _renewal(self, set_cookies: tuple[str, ...]) -> bool:
        """Whether ``set_cookies`` are those last read into the jar, names, values and
        attributes alike, only their expiry moved on, while every cookie in the jar is an
        hour or more from expiring: reading them again would change no cookie the run
        sends. Not when one has no Path (it takes the request's) or deletes a cookie."""
        if len(set_cookies) != len(self._set_cookies) or self._jar_expires - time.time() < 3600:
            return False
        for value, last in zip(set_cookies, self._set_cookies, strict=True):
            lowered = value.lower()
            if "path=" not in lowered or "max-age=0" in lowered or " 1970 " in value:
                return False
            if _EXPIRY.sub("", value) != last:
                return False
        return True
