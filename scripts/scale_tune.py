"""The sweep behind the ivf_sq8 settings (README "A big bank on one machine"): recall@8 against an
exact scan and single-thread p50 of IVF + SQ8 for list multipliers × lists visited, with and
without re-scoring 2× candidates exactly, on a bank embedded by ``kb bench --scale``. Reads only.

    python scripts/scale_tune.py BANK LIST_MULTIPLIERS NPROBES REFINE_NPROBES
    python scripts/scale_tune.py /tmp/kb-scale-1m/bank-1000000 1 64,96,128,160 96

Tuned on title queries sampled with seed 11; seed 1 is the held-out set ``kb bench --scale``
reports. Holds the precombined float32 vectors in memory (1 GB per million at 256 dimensions).
"""
import sys, time, json
import numpy as np, faiss
from kbtools.store.bank import open_bank
from kbtools.retrieval.embedders import get_embedder
from kbtools.retrieval.index import combine
from kbtools.store.vectors import vector_blocks
faiss.omp_set_num_threads(1)
B = sys.argv.pop(1)
bank = open_bank(B, readonly=True)
blocks = vector_blocks(bank)
n = len(blocks.ids)
D = blocks.shape[2]
X = np.empty((n, D), np.float32)
off = 0
for _, d in blocks:
    X[off:off+len(d)] = combine(d); off += len(d)
ids = blocks.ids
print("rows", n, flush=True)
ent = bank.entries
# queries: titles sampled as scale.py does; tune set (seed 11) and held-out set (seed 1)
emb = get_embedder("minilm-static")
Q = {s: emb.encode(ent.sample(200, seed=s)["title"].to_list()).astype(np.float32) for s in (11, 1)}
def exact(q, k=8):
    S = q @ X.T
    top = np.argpartition(-S, k, axis=1)[:, :k+1]
    sc = np.take_along_axis(S, top, 1); o = np.argsort(-sc, 1)
    top, sc = np.take_along_axis(top, o, 1), np.take_along_axis(sc, o, 1)
    return top[:, :k], sc
E = {s: exact(q) for s, q in Q.items()}
for s, (t, sc) in E.items():
    print("seed", s, "ties at 8th/9th (<1e-4):", float(np.mean(sc[:, 7] - sc[:, 8] < 1e-4)), "mean gap", float(np.mean(sc[:,7]-sc[:,8])))
def recall(I, s):
    t = E[s][0]
    return float(np.mean([len(set(a) & set(b)) / 8 for a, b in zip(I, t)]))
def lat(index, q):
    L = []
    for v in q:
        t0 = time.perf_counter(); index.search(v[None], 20); L.append((time.perf_counter()-t0)*1000)
    return float(np.median(L))
res = []
NL = [float(x) for x in sys.argv[1].split(",")]
PROBES = [int(x) for x in sys.argv[2].split(",")]
RPROBES = [int(x) for x in sys.argv[3].split(",")]
for nl_mult in NL:
    nlist = int(np.sqrt(n) * nl_mult)
    t0 = time.perf_counter()
    faiss.omp_set_num_threads(2)
    ivf = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(D), D, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
    samp = np.sort(np.random.default_rng(0).choice(n, min(n, 100*nlist), replace=False))
    ivf.train(X[samp]); ivf.add(X)
    faiss.omp_set_num_threads(1)
    print("nlist", nlist, "build", round(time.perf_counter()-t0, 1), flush=True)
    for nprobe in PROBES:
        ivf.nprobe = nprobe
        r = {s: recall(ivf.search(q, 8)[1], s) for s, q in Q.items()}
        res.append(dict(kind="ivf_sq8", nlist=nlist, nprobe=nprobe, recall=r, p50=lat(ivf, Q[1])))
        print(res[-1], flush=True)
    # refine: re-score kf*k candidates with the exact combined vectors (as the stored vectors give)
    def refined(q, kf):
        _, C = ivf.search(q, int(8 * kf))
        out = []
        for v, c in zip(q, C):
            c = c[c >= 0]; sc = X[c] @ v
            out.append(c[np.argsort(-sc, kind="stable")[:8]])
        return out
    for nprobe in RPROBES:
        for kf in (2,):
            ivf.nprobe = nprobe
            r = {s: recall(refined(q, kf), s) for s, q in Q.items()}
            L = []
            for v in Q[1]:
                t0 = time.perf_counter(); refined(v[None], kf * 20 / 8); L.append((time.perf_counter()-t0)*1000)
            res.append(dict(kind="ivf_sq8+refine", nlist=nlist, nprobe=nprobe, k_factor=kf, recall=r, p50=float(np.median(L))))
            print(res[-1], flush=True)
    ref = None
    del ref, ivf
print(json.dumps(res))
