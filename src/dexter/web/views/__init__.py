"""The pages of `dexter web`, one small module each. A module exposes `routes` (Starlette
`Route`s) and `dexter.web.app.create_app` lists them; every route sits behind the auth gate
(`request.state.login`, CSRF checked on POST), renders with `templating.page(request,
"name.html", ...)` from a template extending `base.html`, and checks ownership with `access`
(`owned_session`, `owned_run`, `may_see`)."""
