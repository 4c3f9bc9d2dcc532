"""Figures that stand on their own in an exported notebook.

In a Jupyter kernel plotly picks the ``plotly_mimetype`` renderer: a figure's output is plotly JSON only, which
JupyterLab draws and an nbconvert HTML export, nbviewer or GitHub leave blank. Importing ``mirage_lab.widgets``
adds plotly's own ``notebook`` renderer beside it (``plotly_mimetype+notebook``, the combination plotly falls back
to for "nbconvert HTML export"): the first figure shown in a kernel session also outputs plotly.js once, inline
(about 5 MB, so the exported page draws offline), and every figure carries an HTML rendering that draws with it.
JupyterLab still draws the live figure from the JSON. A renderer chosen before the import
(``pio.renderers.default = ...``) or through ``PLOTLY_RENDERER`` is left alone.
"""

from __future__ import annotations

import os

import plotly.io as pio

#: what plotly chooses by itself in a Jupyter kernel
JUPYTER_DEFAULT = "plotly_mimetype"
#: the live figure for JupyterLab plus HTML (with plotly.js once per session) for exported pages
EXPORTABLE = "plotly_mimetype+notebook"


def use_exportable_renderer() -> bool:
    """Switch plotly's Jupyter default to ``EXPORTABLE``; True when it did, False when the user chose a renderer
    or this is no Jupyter kernel (a console, VS Code, Colab: plotly's own choice there is kept)."""
    if os.environ.get("PLOTLY_RENDERER") or pio.renderers.default != JUPYTER_DEFAULT:
        return False
    pio.renderers.default = EXPORTABLE
    return True
