package rules

import "reflect"

func reflectValue(v any) reflect.Value { return reflect.ValueOf(v).Elem() }
