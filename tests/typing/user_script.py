"""A user's script, type-checked in strict mode against the installed
package's stubs (``make typecheck``): every value below must have a precise
type, not Any, so a wrong use is reported. It also runs as a plain script,
and tests/python/test_typing.py runs it."""

from __future__ import annotations

import random

import strideweave as sw
import strideweave.friendly as F
import strideweave.functional as fn
import strideweave.nn as nn
from strideweave.profiling import ProfilerAggregate, ProfilerEvent
from strideweave.viz import layout_svg


class MLP(sw.Module):
    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.hidden = nn.Linear(1, 4, rng=rng)
        self.activation = nn.Tanh()
        self.output = nn.Linear(4, 1, rng=rng)

    def forward(self, x: sw.Tensor) -> sw.Tensor:
        return self.output(self.activation(self.hidden(x)))


def layouts() -> int:
    layout: sw.Layout = sw.Layout(sw.Shape([2, [3, 4]]), sw.Stride([1, [10, 100]]))
    index: int = layout((1, (2, 3)))
    divided: sw.Layout = sw.Layout.leaf(24, 1).divide(sw.Layout.leaf(4, 2))
    picture: str = layout_svg(divided, color_by="tile")
    assert picture.startswith("<svg")
    return index + divided.size + layout.cosize


def tensors() -> float:
    layout = sw.Layout(sw.Shape([2, 3]), sw.Stride([1, 2]))
    t = sw.Tensor(sw.CPU(0).new_like([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 0, layout)
    element: float = t[1, 2]  # t[...] with an element key: a number
    flat: float = t[5]
    row: sw.Tensor = t[1, :]  # t[...] with a slice: a view
    first: float = row[0]
    total: sw.Tensor = fn.add(t, t) * 2.0
    value: float = F.item(F.sum(total))  # F.item: a number
    return element + flat + first + value


def training() -> float:
    x = F.tensor([[0.0], [0.5], [1.0]])
    target = F.tensor([[0.0], [0.25], [1.0]])
    model = MLP(random.Random(0))
    linear = nn.Linear(1, 1)
    direct: sw.Tensor = linear(x)  # model(x) on an nn module: a Tensor
    prediction: sw.Tensor = model(x)  # and on a user's module: its forward's type
    opt = nn.SGD(model.parameters(), lr=0.1)
    loss: sw.Tensor = nn.MSELoss()(prediction, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert direct.shape == (3, 1)
    return F.item(loss)


def profiling() -> list[str]:
    t = F.tensor([1.0, -2.0])
    with sw.profile(record_shapes=True) as prof:
        sw.relu(t)
    events: tuple[ProfilerEvent, ...] = prof.events()
    names: list[str] = [e.name for e in events]
    parents: list[int | None] = [e.parent_id for e in events]
    times: list[int] = [e.duration_ns + e.self_time_ns for e in events]
    rows: tuple[ProfilerAggregate, ...] = prof.key_averages()
    mean: float = rows[0].mean_time_ns
    assert parents[0] is None and times[0] >= 0 and mean >= 0
    return names + [row.name for row in rows]


if __name__ == "__main__":
    print(layouts(), tensors(), training() >= 0.0, profiling())
