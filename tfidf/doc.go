// Package tfidf turns labelled text into a dataset hetsgd trains on: a
// vocabulary of word n-grams with TF-IDF weights, as scikit-learn's
// TfidfVectorizer defines them (its default analyzer and token pattern,
// ngram_range, min_df, max_features, sublinear_tf, smooth idf and L2
// rows), fitted to a training file's texts and applied to both splits
// (hetsgd data from-text). The fitted vectorizer and the label names are
// saved beside the sets (tfidf.json), so that text can be scored later by
// the same columns.
//
// Vectorizing runs on every core, and its results do not depend on how
// many: each core numbers the n-grams of a part of the texts (lexicon), the
// parts are merged, and terms are ordered by their text.
//
// Where the definitions leave a choice, this package decides: max_features
// keeps the most frequent terms with ties broken by the term (scikit-learn
// breaks them by NumPy's unstable sort), and text is lowercased by Go's
// Unicode tables (Python's agree outside a few special cases, such as the
// dotted capital I).
package tfidf
