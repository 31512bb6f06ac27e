package setting

import (
	"fmt"
	"strings"
)

// Error is a message that names settings. Its format writes each setting
// it names as a field in braces: "{Config.Devices}" for a field of the
// package's own configuration, "{model.Config.Hidden}" for another
// package's; Field returns the package-qualified name of either.
type Error struct {
	pkg    string // the package whose fields unqualified names are
	format string
	args   []any
	err    error // the message with every field as written, without braces
}

// Errorf returns an Error of pkg ("engine") formatted as fmt.Errorf does,
// %w included, after each "{Field}" of format is written as Field. The
// braces are read in format only, never in args, so values given by users
// are never taken for fields.
func Errorf(pkg, format string, args ...any) error {
	return &Error{pkg: pkg, format: format, args: args,
		err: fmt.Errorf(render(format, func(f string) string { return f }), args...)}
}

func (e *Error) Error() string { return e.err.Error() }

// Unwrap returns the errors the message wraps with %w.
func (e *Error) Unwrap() []error {
	switch u := e.err.(type) {
	case interface{ Unwrap() error }:
		return []error{u.Unwrap()}
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	}
	return nil
}

// Fields returns the package-qualified names of the settings the message
// names ("engine.Config.Devices"), in order, repeats included.
func (e *Error) Fields() []string {
	var fs []string
	render(e.format, func(f string) string {
		fs = append(fs, e.qualify(f))
		return f
	})
	return fs
}

// qualify prefixes a field of the package's own configuration with the
// package's name: Go's exported names begin with a capital, packages don't.
func (e *Error) qualify(field string) string {
	if field != "" && field[0] >= 'A' && field[0] <= 'Z' {
		return e.pkg + "." + field
	}
	return field
}

// Text is the message with each setting named by name, which is given the
// setting's package-qualified field; name returns "" to keep the field as
// written. The errors the message wraps are written as their Error methods
// write them: Rename renames those too.
func (e *Error) Text(name func(field string) string) string {
	format := render(e.format, func(f string) string {
		if n := name(e.qualify(f)); n != "" {
			return strings.ReplaceAll(n, "%", "%%")
		}
		return f
	})
	return fmt.Sprintf(strings.ReplaceAll(format, "%w", "%v"), e.args...)
}

// Rename returns err's message with every setting named by name (see
// Text), in every Error found by unwrapping err: a message that wraps
// another holds the wrapped one's text, which is replaced by its renamed
// text. name returns "" for a field it does not know, which keeps the
// field's own name.
func Rename(err error, name func(field string) string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var walk func(error)
	walk = func(err error) {
		if e, ok := err.(*Error); ok {
			msg = strings.Replace(msg, e.Error(), e.Text(name), 1)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if inner := u.Unwrap(); inner != nil {
				walk(inner)
			}
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return msg
}

// render writes format with each "{field}" replaced by to(field). A brace
// that opens no field (none closes it, or the name holds a space) is kept.
func render(format string, to func(field string) string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(format, '{')
		if i < 0 {
			b.WriteString(format)
			return b.String()
		}
		j := strings.IndexByte(format[i:], '}')
		if j < 0 || strings.ContainsAny(format[i+1:i+j], " {") || j == 1 {
			b.WriteString(format[:i+1])
			format = format[i+1:]
			continue
		}
		b.WriteString(format[:i])
		b.WriteString(to(format[i+1 : i+j]))
		format = format[i+j+1:]
	}
}
