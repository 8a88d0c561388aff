// Command dra-allocator runs k8s.io/dynamic-resource-allocation's structured allocator, with the
// features kube-scheduler v1.37.2 enables by default, on cases read from stdin as JSON
// ({"name": {"node": Node, "slices": [...], "classes": [...], "claims": [...], "allocated":
// [[driver, pool, device], ...]}}) and writes {"name": {"results": [AllocationResult...] | null}}
// or {"name": {"error": "..."}} to stdout. With -cel it evaluates selectors instead (see celCase).
// e2e/dra_allocator/diff.py compares py-scheduler's allocator and CEL environment against it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

type testCase struct {
	Node      v1.Node                      `json:"node"`
	Slices    []*resourceapi.ResourceSlice `json:"slices"`
	Classes   []*resourceapi.DeviceClass   `json:"classes"`
	Claims    []*resourceapi.ResourceClaim `json:"claims"`
	Allocated [][3]string                  `json:"allocated"`
	// Shared: devices in use by earlier allocations with a share ID, and what each consumed.
	Shared []sharedUse `json:"shared"`
}

type sharedUse struct {
	Device   [3]string                                       `json:"device"`
	ShareID  types.UID                                       `json:"shareID"`
	Consumed map[resourceapi.QualifiedName]resource.Quantity `json:"consumed"`
}

// celCase is one selector evaluated against one device (-cel mode).
type celCase struct {
	Expression string             `json:"expression"`
	Device     resourceapi.Device `json:"device"`
	Driver     string             `json:"driver"`
}

type classLister []*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) { return l, nil }

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	for _, c := range l {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("deviceclass.resource.k8s.io %q not found", name)
}

// v1.37.2's defaults (pkg/features): DRAConsumableCapacity, DRADeviceBindingConditions and
// DRAFractionalCapacityRange beta and on, the GA ones on, the alpha ones off.
var features = structured.Features{
	AdminAccess:             true,
	PrioritizedList:         true,
	PartitionableDevices:    true,
	DeviceTaints:            true,
	DeviceBindingAndStatus:  true,
	ConsumableCapacity:      true,
	FractionalCapacityRange: true,
}

func run(c testCase) map[string]any {
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, d := range c.Allocated {
		state.AllocatedDevices.Insert(structured.MakeDeviceID(d[0], d[1], d[2]))
	}
	for _, s := range c.Shared {
		id := structured.MakeDeviceID(s.Device[0], s.Device[1], s.Device[2])
		shareID := s.ShareID
		state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, &shareID))
		state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, s.Consumed))
	}
	cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
	alloc, err := structured.NewAllocator(context.Background(), features, state, classLister(c.Classes), c.Slices, cache)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	results, err := alloc.Allocate(context.Background(), &c.Node, c.Claims)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return map[string]any{"results": results}
}

// evalSelector compiles and evaluates one selector as the allocator does (cel.Cache, DeviceMatches,
// EnhanceRuntimeError); the answer is {"matches": bool} or {"compileError"|"runtimeError": text}.
func evalSelector(cache *cel.Cache, c celCase) map[string]any {
	expr := cache.GetOrCompile(c.Expression)
	if expr.Error != nil {
		return map[string]any{"compileError": expr.Error.Error()}
	}
	matches, _, err := expr.DeviceMatches(context.Background(), cel.Device{Driver: c.Driver,
		AllowMultipleAllocations: c.Device.AllowMultipleAllocations, Attributes: c.Device.Attributes, Capacity: c.Device.Capacity})
	if err != nil {
		return map[string]any{"runtimeError": cel.EnhanceRuntimeError(err).Error()}
	}
	return map[string]any{"matches": matches}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-cel" {
		var cases map[string]celCase
		if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: true})
		out := make(map[string]any, len(cases))
		for name, c := range cases {
			out[name] = evalSelector(cache, c)
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		return
	}
	var cases map[string]testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := make(map[string]any, len(cases))
	for name, c := range cases {
		out[name] = run(c)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
