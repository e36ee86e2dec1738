"""The pages of `dexter web`, one small module each; every module exposes `routes`, and
`dexter.web.app` mounts them all behind the auth gate."""
