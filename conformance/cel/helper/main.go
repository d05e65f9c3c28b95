// Command dra-cel evaluates DRA device selectors with k8s.io/dynamic-resource-allocation/cel,
// the package the API server validates them with and the scheduler's allocator runs.
//
// One invocation reads one JSON request on stdin and writes one JSON response on stdout:
//
//	{"features": {"consumableCapacity": true, "listTypeAttributes": false},
//	 "compile": ["expr", ...],
//	 "match": {"expressions": ["expr", ...],
//	           "devices": [{"driver": "d", "device": <ResourceSlice v1 spec.devices[] entry>}]}}
//
// "compile" checks each expression as the API server does when a claim or class is written
// (the environment for new expressions, the length and cost limits). "match" evaluates each
// expression against each device as the allocator does (the environment for stored
// expressions, no cost estimate, the runtime cost limit); an evaluation error is reported
// with the pair and counts as no match.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type features struct {
	ConsumableCapacity *bool `json:"consumableCapacity"`
	ListTypeAttributes *bool `json:"listTypeAttributes"`
}

type deviceInput struct {
	Driver string             `json:"driver"`
	Device resourceapi.Device `json:"device"`
}

type matchRequest struct {
	Expressions []string      `json:"expressions"`
	Devices     []deviceInput `json:"devices"`
}

type request struct {
	Features features      `json:"features"`
	Compile  []string      `json:"compile"`
	Match    *matchRequest `json:"match"`
}

type problem struct {
	Message string `json:"message"`
	Line    *int   `json:"line,omitempty"`
	Column  *int   `json:"column,omitempty"`
}

type verdict struct {
	Matches bool   `json:"matches"`
	Error   string `json:"error,omitempty"`
}

type response struct {
	Compile []*problem  `json:"compile"`
	Match   [][]verdict `json:"match"`
}

// The first position CEL reports in its issue text: "ERROR: <input>:1:31: ...".
var position = regexp.MustCompile(`<input>:(\d+):(\d+):`)

func withPosition(message string) *problem {
	p := &problem{Message: message}
	if m := position.FindStringSubmatch(message); m != nil {
		line, _ := strconv.Atoi(m[1])
		column, _ := strconv.Atoi(m[2])
		p.Line, p.Column = &line, &column
	}
	return p
}

// The expression field of a claim request, only to word errors as the API server does.
var exprPath = field.NewPath("cel", "expression")

// compileForWrite mirrors the API server's validation of a new selector.
func compileForWrite(c dracelCompiler, expression string) *problem {
	if len(expression) > resourceapi.CELSelectorExpressionMaxLength {
		return &problem{Message: field.TooLong(exprPath, "", resourceapi.CELSelectorExpressionMaxLength).ErrorBody()}
	}
	envType := environment.NewExpressions
	result := c.CompileCELExpression(expression, dracel.Options{EnvType: &envType})
	if result.Error != nil {
		if result.Error.Type == apiservercel.ErrorTypeInvalid {
			return withPosition(result.Error.Detail)
		}
		if result.Error.Type == apiservercel.ErrorTypeRequired {
			return withPosition(field.Required(exprPath, result.Error.Detail).ErrorBody())
		}
		return withPosition(field.InternalError(exprPath, result.Error).ErrorBody())
	}
	if result.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return &problem{Message: field.Forbidden(exprPath, "too complex, exceeds cost limit").ErrorBody()}
	}
	return nil
}

type dracelCompiler interface {
	CompileCELExpression(expression string, options dracel.Options) dracel.CompilationResult
}

// match mirrors the allocator: stored-expression environment, no cost estimate, every
// selector evaluated on its own.
func match(c dracelCompiler, req *matchRequest) [][]verdict {
	ctx := context.Background()
	out := make([][]verdict, len(req.Expressions))
	for i, expression := range req.Expressions {
		result := c.CompileCELExpression(expression, dracel.Options{DisableCostEstimation: true})
		row := make([]verdict, len(req.Devices))
		for j, in := range req.Devices {
			if result.Error != nil {
				row[j] = verdict{Error: fmt.Sprintf("CEL compile error: %v", result.Error)}
				continue
			}
			d := in.Device
			matches, _, err := result.DeviceMatches(ctx, dracel.Device{
				Driver:                   in.Driver,
				AllowMultipleAllocations: d.AllowMultipleAllocations,
				Attributes:               d.Attributes,
				Capacity:                 d.Capacity,
			})
			if err != nil {
				row[j] = verdict{Error: fmt.Sprintf("CEL runtime error: %v", dracel.EnhanceRuntimeError(err))}
				continue
			}
			row[j] = verdict{Matches: matches}
		}
		out[i] = row
	}
	return out
}

func orDefault(v *bool, def bool) bool {
	if v == nil {
		return def
	}
	return *v
}

func main() {
	var req request
	decoder := json.NewDecoder(os.Stdin)
	if err := decoder.Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "dra-cel: cannot read the request: %v\n", err)
		os.Exit(2)
	}
	// Defaults: the Kubernetes 1.37 feature gates (DRAConsumableCapacity beta, on;
	// DRAListTypeAttributes alpha, off).
	c := dracel.GetCompiler(dracel.Features{
		EnableConsumableCapacity: orDefault(req.Features.ConsumableCapacity, true),
		EnableListTypeAttributes: orDefault(req.Features.ListTypeAttributes, false),
	})
	resp := response{Compile: make([]*problem, len(req.Compile)), Match: [][]verdict{}}
	for i, expression := range req.Compile {
		resp.Compile[i] = compileForWrite(c, expression)
	}
	if req.Match != nil {
		resp.Match = match(c, req.Match)
	}
	if err := json.NewEncoder(os.Stdout).Encode(resp); err != nil {
		fmt.Fprintf(os.Stderr, "dra-cel: cannot write the response: %v\n", err)
		os.Exit(1)
	}
}
