"""The only package that talks to the API server.

Client and HTTP, the pod list-watch, kopf wiring, sync, binder, events and leader election live here.
"""
