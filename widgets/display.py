"""How the two-form views show themselves in a notebook: the live ipywidgets view where a widget manager
exists, the static HTML fragment everywhere else (exported HTML, GitHub, nbconvert, a plain console)."""

from __future__ import annotations

from typing import Any


class LiveOrStatic:
    """Mixin for a view with ``to_html()`` (static, self-contained) and ``widget()`` (ipywidgets)."""

    def to_html(self) -> str:
        raise NotImplementedError

    def widget(self) -> Any:
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        data = {"text/plain": repr(self), "text/html": self.to_html()}
        try:
            view = self.widget()
        except ImportError:  # ipywidgets is the ``lab`` extra
            return data
        return {**view._repr_mimebundle_(), **data}


class StaticBeside:
    """Mixin for an ipywidget (first in the bases): its mimebundle carries ``to_html()``, a static rendering of the
    current state, beside the widget view. JupyterLab shows the live view; an exported page (nbconvert without a
    saved widget state), GitHub or a plain console shows the static one instead of nothing."""

    def to_html(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        live = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        data, metadata = live if isinstance(live, tuple) else (live or {}, {})  # anywidget's: (data, metadata)
        return {**data, "text/html": self.to_html()}, metadata


def check_widget_options(widget_class: Any, options: dict[str, Any]) -> None:
    """Extra keywords of an anywidget view go to ipywidgets as traits (``layout=…``); traitlets would only warn
    about a mistyped one, so name it here instead."""
    from mirage_lab.arguments import did_you_mean
    from mirage_lab.errors import ArgumentError

    traits = widget_class.class_trait_names()
    for key in options:
        if key not in traits:
            hint = did_you_mean(key, ["graph", "run", "engine", "progress", *traits])
            raise ArgumentError(f"{widget_class.__name__}() got unknown keyword argument {key!r}{hint}; extra "
                                "keywords are ipywidgets traits such as layout=")
