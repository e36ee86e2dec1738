"""Dexter in the browser: the web app and the OpenBB Workspace agent endpoint (ASGI, SSE).

A front door like `cli/`: every run comes from `dexter.runtime`; nothing here builds models,
tools or stores.
"""
