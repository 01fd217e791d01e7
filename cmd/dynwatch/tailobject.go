package main

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/dynwatch/dynwatch/config"
)

// objectArgs reads tail's arguments as kubectl get reads them: RESOURCE[,…],
// TYPE NAME or TYPE/NAME (one object). It returns the resources; a name is
// kept in f, for selectorConditions.
func (f *tailFlags) objectArgs(pos []string) (string, error) {
	switch {
	case len(pos) == 2 && !strings.Contains(pos[0], ",") && !strings.Contains(pos[1], "/"):
		f.name = pos[1]
		return pos[0], nil
	case len(pos) == 1 && strings.Count(pos[0], "/") == 1 && !strings.Contains(pos[0], ","):
		typ, name, _ := strings.Cut(pos[0], "/")
		if typ == "" || name == "" {
			return "", fmt.Errorf("want TYPE/NAME, got %q", pos[0])
		}
		f.name = name
		return typ, nil
	case len(pos) == 1:
		return pos[0], nil
	}
	return "", errors.New("give the resources as one argument, comma-separated (e.g. deployments,widgets.example.com), or one object as TYPE NAME or TYPE/NAME")
}

// selectorConditions turns the object's name and --field-selector into
// conditions: every field is a path, every value a string, as the API server
// reads a field selector.
func (f *tailFlags) selectorConditions() ([]config.ConditionSpec, error) {
	var out []config.ConditionSpec
	str := func(v string) config.Value {
		return config.Value{Node: &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}}
	}
	if f.name != "" {
		out = append(out, config.ConditionSpec{Path: "metadata.name", Op: "eq", Value: str(f.name)})
	}
	if strings.TrimSpace(f.fieldSelector) == "" {
		return out, nil
	}
	sel, err := fields.ParseSelector(f.fieldSelector)
	if err != nil {
		return nil, fmt.Errorf("--field-selector: %w", err)
	}
	for _, r := range sel.Requirements() {
		op := "eq"
		if r.Operator == selection.NotEquals {
			op = "ne"
		}
		out = append(out, config.ConditionSpec{Path: r.Field, Op: op, Value: str(r.Value)})
	}
	return out, nil
}
