"""One reproduction student (400 steps, batch 64, a 16x16 Random+C+A canvas set, tile crops, hard labels),
single-thread: the evaluator's loop with torch.optim.AdamW + LambdaLR against `train_student` (its bit-identical
`_optim.AdamW`), alternated so both see the same machine load; prints min / median seconds and checks the
weights are equal.

    flock /tmp/icml26-cpu.lock .venv/bin/python benchmarks/dataset_compression_student_step.py
"""

import statistics
import time

import torch
import torch.nn.functional as F

from icml26.dataset_compression.augment import TileConstrainedRandomResizedCrop
from icml26.dataset_compression.benchmark import cosine_lr, train_student
from icml26.dataset_compression.data import load_split
from icml26.dataset_compression.models import convnet_factory, make_model
from icml26.dataset_compression.pca import PCACompressor


def torch_loop(model, images, labels, augment, steps=400, batch_size=64, lr=3e-3, weight_decay=0.01, seed=0):
    g = torch.Generator().manual_seed(seed)
    args = augment._validated()  # the same crop call as train_student's
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr(s, steps))
    for _ in range(steps):
        idx = torch.randint(len(images), (batch_size,), generator=g)
        loss = F.cross_entropy(model(augment._apply(images[idx], g, *args)), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()


def main(reps: int = 5) -> None:
    torch.set_num_threads(1)
    d = load_split("digits", 0, 16)
    pca = PCACompressor(1, 2, "random", scale=(0.5, 1.0), random_state=10_000).fit(d.X_pool, d.y_pool,
                                                                                     tiles=d.pool_half)
    images, labels = pca.canvases_, pca.canvas_labels_
    augment = TileConstrainedRandomResizedCrop(16, 2, scale=(0.5, 1.0))
    times = {"torch AdamW + LambdaLR": [], "train_student": []}
    for _ in range(reps):
        a = make_model(convnet_factory(1, 10, 16), 0)
        t0 = time.process_time()
        torch_loop(a, images, labels, augment)
        times["torch AdamW + LambdaLR"].append(time.process_time() - t0)
        b = make_model(convnet_factory(1, 10, 16), 0)
        t0 = time.process_time()
        train_student(b, images, labels, augment=augment, label_mode="hard", teacher=None, temperature=4.0,
                      steps=400, batch_size=64, lr=3e-3, weight_decay=0.01, seed=0)
        times["train_student"].append(time.process_time() - t0)
        assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    for k, v in times.items():
        print(f"{k:24s} CPU time min {min(v):.2f} s  median {statistics.median(v):.2f} s over {reps}")
    print("weights bit-identical: yes")


if __name__ == "__main__":
    main()
