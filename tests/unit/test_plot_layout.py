"""Plots hide no data: the cactus legend sits outside the axes, nothing is cut off the figure's edge."""

from __future__ import annotations

from packsolve.report.cactus import cactus_figure, scatter_figure

LINES = [
    {
        "label": f"run {i} a-rather-long-label ({h})",
        "times": [0.00001 * (i + 1)] + [0.01 * k for k in range(1, 300)],
    }
    for i, h in enumerate(["plain", "dlx", "auto"])
]


def extents(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # as save() draws it
    canvas.draw()
    return canvas.get_renderer(), fig.bbox


def test_the_cactus_legend_is_outside_the_axes_and_inside_the_figure():
    fig = cactus_figure(LINES)
    renderer, figure_box = extents(fig)
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent(renderer)
    assert not legend.overlaps(ax.get_window_extent(renderer))  # never over a run's line
    assert figure_box.contains(legend.x0, legend.y0) and figure_box.contains(legend.x1 - 1, legend.y1 - 1)


def test_the_scatter_axis_labels_lie_inside_the_figure():
    points = [
        {
            "level": str(i),
            "level_hash": str(i),
            "x": 0.01 * (i + 1),
            "y": 0.02 * (i + 1),
            "x_status": "solved",
            "y_status": "timeout" if i % 3 else "solved",
        }
        for i in range(50)
    ]
    fig = scatter_figure(
        {
            "x_label": "run 1 a-long-label (plain)",
            "y_label": "run 2 a-long-label (dlx)",
            "x_run": 1,
            "y_run": 2,
            "points": points,
        }
    )
    renderer, figure_box = extents(fig)
    for label in (fig.axes[0].yaxis.label, fig.axes[0].xaxis.label):
        box = label.get_window_extent(renderer)
        assert box.x0 >= figure_box.x0 and box.y0 >= figure_box.y0, label.get_text()
        assert box.x1 <= figure_box.x1 and box.y1 <= figure_box.y1, label.get_text()


def test_a_time_too_short_to_show_is_said_so_not_zero():
    from packsolve.report.cactus import time_text

    assert time_text(0.00001) == "<0.0001"
    assert time_text(0.0) == "<0.0001" and time_text(1234.5) == "1,234.5" and time_text(0.01234) == "0.0123"
