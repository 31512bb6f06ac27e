package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// WriteYAML writes the settings as a YAML config file, with header as its
// comment: one key per line, a strategy's options nested under its name,
// lists in flow style, and strings quoted only where YAML would read them
// as something else, so that a YAML reader gives back the same values.
func (s Settings) WriteYAML(w io.Writer, header string) error {
	var b bytes.Buffer
	for _, line := range strings.Split(header, "\n") {
		b.WriteString("# " + line + "\n")
	}
	for _, x := range s {
		if sub, ok := x.Value.(Settings); ok {
			b.WriteString(x.Name + ":\n")
			for _, y := range sub {
				fmt.Fprintf(&b, "  %s: %s\n", y.Name, YAMLScalar(y.Value))
			}
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", x.Name, YAMLScalar(x.Value))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// plainYAML are strings YAML reads back as the same string unquoted.
var plainYAML = regexp.MustCompile(`^[A-Za-z_./][A-Za-z0-9_./+-]*$`)

// YAMLScalar writes a setting's value in YAML's flow style. Strings that could read as
// something else are quoted as JSON quotes them, which YAML reads.
func YAMLScalar(v any) string {
	switch v := v.(type) {
	case string:
		switch strings.ToLower(v) {
		case "true", "false", "yes", "no", "on", "off", "null", "y", "n":
		default:
			if plainYAML.MatchString(v) {
				return v
			}
		}
		b, _ := json.Marshal(v)
		return string(b)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []int:
		if len(v) == 0 {
			return "none" // --hidden none: a linear model
		}
		return yamlList(v)
	case []float64:
		return yamlList(v)
	case []string:
		return yamlList(v)
	case []any: // read back from JSON
		if len(v) == 0 {
			return "none"
		}
		return yamlList(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func yamlList[T any](v []T) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = YAMLScalar(x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
