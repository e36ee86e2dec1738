"""The queue: runs enqueued by front doors (the gateway, the scheduler) and executed by workers.

One user: nothing is enqueued; the gateway's `InProcessDispatcher` and the scheduler's agent
executor run everything in the process that received it, as before. A team (a Postgres
database configured): front doors enqueue runs on a durable queue in that database and
`dexter worker` processes, on any number of machines, run them. The engine is procrastinate
(see `engine`); what a run does is a handler the front door's package registers by kind, so
this package imports neither the gateway nor the scheduler.
"""
