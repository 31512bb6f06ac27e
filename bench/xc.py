"""The Extreme Classification Repository's text format, read into CSR arrays
(read_xc) or dense 0/1 matrices (presence) for the benchmark scripts
(bench/torch_xml.py, bench/xc_structure.py, bench/xc_families.py): a header
"points features labels", then a line a point, "l1,l2 f:v f:v" (no labels:
the line starts with its features). Gzip-compressed files (".gz") are read
as they are."""
import gzip

import numpy as np


def read_xc(path):
    """Returns (indptr, indices, values, label_ptr, labels, features,
    label_count): the features' CSR (values as float32) and the labels'
    (a pattern), and the header's dimensions."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        n, d, l = map(int, f.readline().split())
        indptr, idx, val, lptr, lab = [0], [], [], [0], []
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() and len(lptr) - 1 == n:
                continue
            toks = line.split(" ")
            if toks and toks[0] and ":" not in toks[0]:
                lab.extend(int(x) for x in toks[0].split(","))
                toks = toks[1:]
            for t in toks:
                if t:
                    k, v = t.split(":")
                    idx.append(int(k))
                    val.append(float(v))
            indptr.append(len(idx))
            lptr.append(len(lab))
    return (np.array(indptr, dtype=np.int64), np.array(idx, dtype=np.int64), np.array(val, dtype=np.float32),
            np.array(lptr, dtype=np.int64), np.array(lab, dtype=np.int64), d, l)


def presence(path, dtype=np.uint8):
    """The set at path as 0/1 matrices of dtype: points × features,
    points × labels."""
    indptr, idx, _, lptr, lab, d, k = read_xc(path)
    n = len(indptr) - 1
    x = np.zeros((n, d), dtype=dtype)
    y = np.zeros((n, k), dtype=dtype)
    x[np.repeat(np.arange(n), np.diff(indptr)), idx] = 1
    y[np.repeat(np.arange(n), np.diff(lptr)), lab] = 1
    return x, y
