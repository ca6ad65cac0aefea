"""The full-screen terminal UI (urwid). ``app.run`` has the same contract as ``plain.run``.

urwid is imported only inside this package, so the rest of cox (headless, plain) starts without it.
"""
