package tfidf

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens appends to dst the words of text as scikit-learn's default
// analyzer finds them: lowercased, maximal runs of at least two word
// characters (its token pattern (?u)\b\w\w+\b: letters, numbers and the
// underscore).
func Tokens(text string, dst []string) []string {
	var t tokenizer
	t.cut(text)
	for i := 0; i < len(t.spans); i += 2 {
		dst = append(dst, string(t.lower[t.spans[i]:t.spans[i+1]]))
	}
	return dst
}

// tokenizer cuts text into words as Tokens does, into buffers it reuses:
// lower is the text lowercased, and the words are lower[spans[2i]:spans[2i+1]].
type tokenizer struct {
	lower []byte
	spans []int32
}

// asciiWord says whether an ASCII byte is a word character.
var asciiWord = func() (w [128]bool) {
	for c := range w {
		w[c] = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	return w
}()

// cut finds text's words. ASCII text, most of it, is lowercased and
// classified by table, byte by byte; any other is lowercased by
// strings.ToLower and classified by Unicode's tables, as Tokens defines.
func (t *tokenizer) cut(text string) {
	t.lower = t.lower[:0]
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= utf8.RuneSelf {
			t.lower = append(t.lower[:0], strings.ToLower(text)...)
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		t.lower = append(t.lower, c)
	}
	t.spans = t.spans[:0]
	start, runes := -1, 0
	for i := 0; i < len(t.lower); {
		c, size := t.lower[i], 1
		var word bool
		if c < utf8.RuneSelf {
			word = asciiWord[c]
		} else {
			var r rune
			r, size = utf8.DecodeRune(t.lower[i:])
			word = r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
		}
		switch {
		case word && start < 0:
			start, runes = i, 1
		case word:
			runes++
		case start >= 0:
			if runes >= 2 {
				t.spans = append(t.spans, int32(start), int32(i))
			}
			start = -1
		}
		i += size
	}
	if start >= 0 && runes >= 2 {
		t.spans = append(t.spans, int32(start), int32(len(t.lower)))
	}
}

// word returns the i-th word of the text cut last.
func (t *tokenizer) word(i int) []byte { return t.lower[t.spans[2*i]:t.spans[2*i+1]] }

// words returns the number of words of the text cut last.
func (t *tokenizer) words() int { return len(t.spans) / 2 }
