"""Sign in (API key or OAuth token), sign out (here or everywhere), the account page with this
sign-in's sessions, and the namespace picker: the agents and projects the key may see, with
their counts, and an all-namespaces view (read-only) for keys that cover them."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ...errors import InvalidInput, NotFound, PermissionDenied
from ...repository.console_sessions import ConsoleSessionRepository, NamespaceCount
from ..auth import check_namespace, cookie_value, new_token
from ..web import PREFIX, Console, Ctx

MAX_LISTED = 200


def _next(raw: str) -> str:
    """Where to go after signing in: a console page only (never another site)."""
    if raw.startswith(PREFIX + "/") and not raw.startswith("//") and "\\" not in raw:
        return raw[len(PREFIX):]
    return "/"


def repo(ctx: Ctx) -> ConsoleSessionRepository:
    assert ctx.st.db is not None
    return ConsoleSessionRepository(ctx.st.db.pool, ctx.st.db.admin)


def covers_all(ctx: Ctx) -> bool:
    """A key that names no agents and no projects covers every namespace of its user."""
    if ctx.console.settings.no_auth:
        return True
    credential = ctx.console.sessions.credential(ctx.session)
    return credential is not None and credential.agents is None and credential.projects is None


def grants(ctx: Ctx) -> tuple[list[str] | None, list[str] | None]:
    if ctx.console.settings.no_auth:
        return None, None
    credential = ctx.console.sessions.credential(ctx.session)
    assert credential is not None
    return (list(credential.agents) if credential.agents is not None else None,
            list(credential.projects) if credential.projects is not None else None)


async def namespaces(ctx: Ctx) -> list[NamespaceCount]:
    await ctx.service()
    return await repo(ctx).namespaces(ctx.p.user_id, *grants(ctx), limit=MAX_LISTED)


async def signin_form(ctx: Ctx) -> Response:
    if ctx.console.settings.no_auth or ctx.principal is not None:
        return ctx.redirect("/")
    return ctx.render("signin.html", next=ctx.params.get("next"), jwt=ctx.console.sessions.jwt.enabled)


async def signin(ctx: Ctx) -> Response:
    if ctx.console.settings.no_auth:
        return ctx.redirect("/")
    agent, project = check_namespace(ctx.form.get("agent"), ctx.form.get("project"))
    signed = await ctx.console.sessions.sign_in(ctx.st, ctx.form.get("key"), agent=agent, project=project,
                                                user_agent=ctx.request.headers.get("user-agent", ""))
    if signed is None:
        return ctx.render("signin.html", status=401, next=ctx.form.get("next"), jwt=ctx.console.sessions.jwt.enabled,
                          error="That key or token was not accepted (unknown, revoked or expired).")
    ctx.session, ctx.cookie = signed
    return ctx.redirect(_next(ctx.form.get("next")))


async def signout(ctx: Ctx) -> Response:
    await ctx.console.sessions.sign_out(ctx.st, ctx.session)  # the stored session is gone: a copy of the cookie too
    ctx.cookie = cookie_value(None, new_token())
    return ctx.redirect("/" if ctx.console.settings.no_auth else "/signin", done="signedout")


async def signout_everywhere(ctx: Ctx) -> Response:
    if ctx.session.row is not None:
        await ctx.console.sessions.sign_out_everywhere(ctx.st, ctx.session)
    ctx.cookie = cookie_value(None, new_token())
    return ctx.redirect("/" if ctx.console.settings.no_auth else "/signin", done="everywhere")


async def account(ctx: Ctx) -> Response:
    sessions = await ctx.console.sessions.listing(ctx.st, ctx.session) if ctx.session.row is not None else []
    return ctx.render("account.html", sessions=sessions, current=ctx.session.row.id if ctx.session.row else None,
                      idle_minutes=ctx.console.settings.console_idle_minutes,
                      hours=ctx.console.settings.console_session_hours)


async def picker(ctx: Ctx) -> Response:
    found = await namespaces(ctx)
    return ctx.render("namespaces.html", namespaces=found, covers_all=covers_all(ctx),
                      all_namespaces=ctx.session.all_namespaces, listed_max=MAX_LISTED)


def _known(found: list[NamespaceCount], agent: str | None, project: str | None) -> str | None:
    """Why a namespace is unknown (no memory of this key lives there), or None."""
    for name, value, have in (("agent", agent, {n.agent_id for n in found}),
                              ("project", project, {n.project_id for n in found})):
        if value is not None and value not in have:
            return f"{name} {value!r} is unknown: no memory this key may see lives there"
    return None


async def namespace(ctx: Ctx) -> Response:
    everything = ctx.form.flag("all")
    agent, project = (None, None) if everything else check_namespace(ctx.form.get("agent"), ctx.form.get("project"))
    if everything and not covers_all(ctx):
        raise PermissionDenied("all namespaces: this key names its agents or projects, so it may see only those")
    if ctx.console.sessions.principal(ctx.session, agent, project, explicit=True) is None:
        raise PermissionDenied("sign in first")  # also: a namespace outside the grants is refused here
    why = _known(await namespaces(ctx), agent, project)
    if why is not None:
        raise NotFound(f"{why} (typo? the Namespaces page lists the known ones); nothing was switched")
    if ctx.session.row is None:  # the local owner's first choice: a session that remembers it
        session, ctx.cookie = await ctx.console.sessions.local(ctx.st, ctx.request.headers.get("user-agent", ""))
        ctx.session = session
    assert ctx.session.row is not None
    await ctx.console.sessions.set_namespace(ctx.st, ctx.session, agent, project, everything)
    return ctx.redirect("/", done="namespace")


async def everywhere_view(ctx: Ctx) -> Response:
    """The all-namespaces view: the newest memories of every namespace the key covers (read-only)."""
    if not ctx.session.all_namespaces:
        return ctx.redirect("/namespaces")
    await ctx.service()
    page = ctx.params.int("page", 1, 1, 100_000)
    size = 50
    rows, total = await repo(ctx).recent_across(ctx.p.user_id, *grants(ctx), limit=size, offset=(page - 1) * size)
    pages = max(1, -(-total // size))
    if page > pages:
        raise InvalidInput(f"page: there are {pages} pages")
    return ctx.render("everywhere.html", rows=rows, total=total, page=page, pages=pages)


def routes(console: Console) -> list[Route]:
    return [Route("/signin", console.page(signin_form, public=True), methods=["GET"]),
            Route("/signin", console.page(signin, public=True), methods=["POST"]),
            Route("/signout", console.page(signout, public=True), methods=["POST"]),
            Route("/signout-everywhere", console.page(signout_everywhere), methods=["POST"]),
            Route("/account", console.page(account), methods=["GET"]),
            Route("/namespaces", console.page(picker), methods=["GET"]),
            Route("/everywhere", console.page(everywhere_view), methods=["GET"]),
            Route("/namespace", console.page(namespace), methods=["POST"])]

