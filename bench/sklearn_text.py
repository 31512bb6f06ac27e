"""scikit-learn's side of BENCHMARKS.md §22: labelled text (labels<TAB>text
lines) vectorized by TfidfVectorizer, timed, and written as a dataset folder
in the XC format hetsgd reads.

Usage: sklearn_text.py TRAIN TEST OUT_DIR|- [MIN_N MAX_N MIN_DF MAX_FEATURES SUBLINEAR]
(defaults 1 2 1 0 1, those of hetsgd data from-text; MAX_FEATURES 0: all).
With OUT_DIR "-" nothing is written. Prints one JSON line: the seconds to
read the texts, to vectorize them (fit_transform of TRAIN, transform of
TEST) and to write the folder, and the set's shape. The labels are
numbered as hetsgd numbers them: the training file's names, sorted; a test
label the training file lacks is dropped.
"""
import json
import os
import sys
import time

from sklearn.feature_extraction.text import TfidfVectorizer


def read(path):
    labels, texts = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            ls, text = line.rstrip("\n").split("\t", 1)
            labels.append([l.strip() for l in ls.split(",") if l.strip()])
            texts.append(text)
    return labels, texts


def write(path, x, labels, names, d):
    x.sort_indices()
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{x.shape[0]} {d} {len(names)}\n")
        for i in range(x.shape[0]):
            ids = sorted({names[l] for l in labels[i] if l in names})
            lo, hi = x.indptr[i], x.indptr[i + 1]
            feats = " ".join(f"{j}:{v:.9g}" for j, v in zip(x.indices[lo:hi], x.data[lo:hi]))
            f.write(",".join(map(str, ids)) + " " + feats + "\n")


def main():
    train_path, test_path, out = sys.argv[1:4]
    min_n, max_n, min_df, max_features, sublinear = (int(a) for a in (sys.argv[4:9] or [1, 2, 1, 0, 1]))
    t0 = time.perf_counter()
    ytr, train = read(train_path)
    yte, test = read(test_path)
    t1 = time.perf_counter()
    v = TfidfVectorizer(ngram_range=(min_n, max_n), min_df=min_df,
                        max_features=max_features or None, sublinear_tf=bool(sublinear))
    xtr = v.fit_transform(train)
    xte = v.transform(test)
    t2 = time.perf_counter()
    if out != "-":
        os.makedirs(out, exist_ok=True)
        names = {l: i for i, l in enumerate(sorted({l for ls in ytr for l in ls}))}
        write(os.path.join(out, "train.txt"), xtr, ytr, names, xtr.shape[1])
        write(os.path.join(out, "test.txt"), xte, yte, names, xtr.shape[1])
    t3 = time.perf_counter()
    print(json.dumps({"read_s": t1 - t0, "vectorize_s": t2 - t1, "write_s": t3 - t2,
                      "train": xtr.shape[0], "test": xte.shape[0], "terms": xtr.shape[1]}))


main()
