"""`py-scheduler dashboard`: a read-only web page of the scheduler's decisions on the live cluster (the
subcommand in ``command``, its HTTP server, the source of its answers, their views and the static page)."""
