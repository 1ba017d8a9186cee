"""The floor for bench_browser.py: the least a marimo page with one slider and one Plotly chart
costs on this machine (server start, Chromium, marimo's frontend, one round trip per move).
Each lab's times are printed beside it, measured in the same run."""

import marimo

app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    import plotly.graph_objects as go

    mo.md("Floor page. A) ready")
    return go, mo


@app.cell
def _(mo):
    slider = mo.ui.slider(1, 64, value=8, label="n", show_value=True)
    slider
    return (slider,)


@app.cell
def _(go, slider):
    go.Figure(go.Scatter(x=list(range(64)), y=[min(i, slider.value) for i in range(64)]))
    return


if __name__ == "__main__":
    app.run()
