"""Sign in (API key or OAuth token), sign out, and pick the agent / project to act as."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from ...errors import PermissionDenied
from ..auth import check_namespace, new_session
from ..web import PREFIX, Console, Ctx


def _next(raw: str) -> str:
    """Where to go after signing in: a console page only (never another site)."""
    if raw.startswith(PREFIX + "/") and not raw.startswith("//") and "\\" not in raw:
        return raw[len(PREFIX):]
    return "/"


async def signin_form(ctx: Ctx) -> Response:
    if ctx.console.settings.no_auth or ctx.principal is not None:
        return ctx.redirect("/")
    return ctx.render("signin.html", next=ctx.params.get("next"), jwt=ctx.console.sessions.jwt.enabled)


async def signin(ctx: Ctx) -> Response:
    if ctx.console.settings.no_auth:
        return ctx.redirect("/")
    agent, project = check_namespace(ctx.form.get("agent"), ctx.form.get("project"))
    session = await ctx.console.sessions.sign_in(ctx.state, ctx.form.get("key"))
    if session is None:
        return ctx.render("signin.html", status=401, next=ctx.form.get("next"), jwt=ctx.console.sessions.jwt.enabled,
                          error="That key or token was not accepted (unknown, revoked or expired).")
    session = session.model_copy(update={"agent": agent, "project": project})
    await ctx.console.sessions.principal(ctx.state, session)  # a namespace outside the grants is refused now
    ctx.new_session = session
    return ctx.redirect(_next(ctx.form.get("next")))


async def signout(ctx: Ctx) -> Response:
    ctx.new_session = new_session()
    return ctx.redirect("/" if ctx.console.settings.no_auth else "/signin", done="signedout")


async def namespace(ctx: Ctx) -> Response:
    agent, project = check_namespace(ctx.form.get("agent"), ctx.form.get("project"))
    session = ctx.session.model_copy(update={"agent": agent, "project": project})
    if await ctx.console.sessions.principal(ctx.state, session) is None:
        raise PermissionDenied("sign in first")
    ctx.new_session = session
    return ctx.redirect("/", done="namespace")


def routes(console: Console) -> list[Route]:
    return [Route("/signin", console.page(signin_form, public=True), methods=["GET"]),
            Route("/signin", console.page(signin, public=True), methods=["POST"]),
            Route("/signout", console.page(signout, public=True), methods=["POST"]),
            Route("/namespace", console.page(namespace), methods=["POST"])]
