package apidocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"
)

// JSON returns the contract's YAML text as JSON with every mapping's keys in
// the order they are written. Readers that keep that order (Redoc shows an
// operation's first reply and its first example first, and a schema's
// properties as listed) then show what the document puts first: a
// marshalled map would sort them, putting an error example before the
// success and a required field after the optional ones.
func JSON(yamlText []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(yamlText, &doc); err != nil {
		return nil, fmt.Errorf("apidocs: the contract: %w", err)
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, &doc); err != nil {
		return nil, fmt.Errorf("apidocs: the contract: %w", err)
	}
	if !json.Valid(buf.Bytes()) { // a guard: the writer below must never produce this
		return nil, fmt.Errorf("apidocs: the contract as JSON is not valid JSON")
	}
	return buf.Bytes(), nil
}

func writeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("line %d: a document of %d nodes", n.Line, len(n.Content))
		}
		return writeJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return writeJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key that is not a scalar", k.Line)
			}
			if k.Tag == "!!merge" {
				return fmt.Errorf("line %d: merge keys are not supported", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: the key %q twice", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.Value)
			buf.WriteByte(':')
			if err := writeJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, v := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		return writeScalar(buf, n)
	}
	return fmt.Errorf("line %d: a node of kind %d", n.Line, n.Kind)
}

func writeScalar(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return err
		}
		buf.WriteString(strconv.FormatBool(b))
	case "!!int", "!!float":
		// A number keeps its digits when they are already JSON's (1200.50
		// stays 1200.50); other spellings (0x1F, 1_000, .5) are converted.
		if json.Valid([]byte(n.Value)) && n.Value[0] != '"' {
			buf.WriteString(n.Value)
			return nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return err
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("line %d: %s has no JSON form", n.Line, n.Value)
		}
		buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case "!!str", "!!timestamp", "!!binary":
		// A timestamp stays the text written (kin-openapi and JSON readers see a string).
		writeString(buf, n.Value)
	default:
		return fmt.Errorf("line %d: a scalar tagged %s", n.Line, n.Tag)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always marshals
	buf.Write(b)
}
