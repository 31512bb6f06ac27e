"""The TF-IDF rows of scikit-learn's TfidfVectorizer for labelled text, the
reference the Go vectorizer is checked against.

Usage: sklearn_reference.py TRAIN TEST MIN_N MAX_N MIN_DF MAX_FEATURES SUBLINEAR
(MAX_FEATURES 0: all; SUBLINEAR 0 or 1). Prints one JSON object: terms (the
vocabulary, by column), idf, and train and test, each a list of rows
[[column, value], ...].
"""
import json
import sys

from sklearn.feature_extraction.text import TfidfVectorizer


def texts(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(line.rstrip("\n").split("\t", 1)[1])
    return out


train, test = texts(sys.argv[1]), texts(sys.argv[2])
min_n, max_n, min_df, max_features, sublinear = (int(a) for a in sys.argv[3:8])
v = TfidfVectorizer(ngram_range=(min_n, max_n), min_df=min_df,
                    max_features=max_features or None, sublinear_tf=bool(sublinear))
xtr = v.fit_transform(train).tocsr()
xte = v.transform(test).tocsr()
terms = v.get_feature_names_out().tolist()


def rows(x):
    x.sort_indices()
    return [[[int(j), float(val)] for j, val in zip(x.indices[x.indptr[i]:x.indptr[i + 1]],
                                                    x.data[x.indptr[i]:x.indptr[i + 1]])]
            for i in range(x.shape[0])]


print(json.dumps({"terms": terms, "idf": v.idf_.tolist(), "train": rows(xtr), "test": rows(xte)}))
