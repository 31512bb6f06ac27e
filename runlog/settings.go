package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Settings are a run's settings in order, as a config file holds them: each
// one's name (the flag's, without dashes) and value. A strategy's options
// are a nested Settings under the strategy's name. Values are bool, string,
// float64, int, uint64, []int, []float64, []string or Settings; read back
// from JSON, numbers are float64 and lists []any.
type Settings []Setting

// Setting is one named value of Settings.
type Setting struct {
	Name  string
	Value any
}

// Lookup returns the value of the setting called name.
func (s Settings) Lookup(name string) (any, bool) {
	for _, x := range s {
		if x.Name == name {
			return x.Value, true
		}
	}
	return nil, false
}

// MarshalJSON writes the settings as a JSON object, in order.
func (s Settings) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(x.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(x.Value)
		if err != nil {
			return nil, fmt.Errorf("runlog: setting %s: %w", x.Name, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object, keeping its order; nested objects are
// Settings.
func (s *Settings) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return errors.New("runlog: settings: not a JSON object")
	}
	v, err := readObject(dec)
	if err != nil {
		return fmt.Errorf("runlog: settings: %w", err)
	}
	*s = v
	return nil
}

// readObject reads an object's members after its opening brace.
func readObject(dec *json.Decoder) (Settings, error) {
	out := Settings{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		v, err := readValue(dec)
		if err != nil {
			return nil, err
		}
		out = append(out, Setting{name, v})
	}
	_, err := dec.Token() // the closing brace
	return out, err
}

func readValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		return readObject(dec)
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := readValue(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return t, nil
}
