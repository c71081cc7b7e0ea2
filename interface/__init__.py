"""HTTP and command-line interface of runcode-policy; `create_app` is the Flask app factory.

The factory is imported lazily so that `interface.gate` (standard library only, meant to be
copied into sandbox images) does not drag Flask and the store drivers in when it is installed.
"""


def __getattr__(name: str):
    if name == "create_app":
        from interface.app import create_app

        return create_app
    raise AttributeError(name)


__all__ = ["create_app"]
