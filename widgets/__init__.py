"""The notebook layer (``mirage_lab.widgets``): views over what the engine computes.

It imports only the engine's public API and never computes what a script could not
also get from the engine. Widgets arrive with the notebook issue; today the
engine's objects render themselves in notebooks through their ``_repr_html_``.
"""
