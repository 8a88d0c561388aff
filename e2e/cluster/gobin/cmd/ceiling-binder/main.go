// Command ceiling-binder is the benchmark's Go "ceiling": a binder with no scheduling algorithm at all,
// built from the same pinned client-go as kube-scheduler, so that what it reaches is what the API server
// allows rather than what one Python process (and its GIL) allows.
//
// It lists the nodes once, list-watches the pods of its schedulerName that have no node (the field
// selector spec.schedulerName=NAME,spec.nodeName=, through an informer as kube-scheduler's is), and
// POSTs a Binding for each new pod from --workers goroutines, round-robin over the nodes in the order the
// pods arrive. No cache, no filters, no scores, no status updates. With --events each binding is
// followed by the Scheduled event (events.k8s.io/v1) written through client-go's event broadcaster, the
// recorder kube-scheduler uses, with kube-scheduler's reason, action and note.
//
// It prints the same two lines as the Python ceiling (e2e/perf/ceiling.py): one when the nodes are
// listed, one on SIGTERM/SIGINT with the bindings made, failed and the connections opened.
//
// Only client-go API shared by the Kubernetes versions this module is pinned to across bumps is used.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
)

// sourceHash is set by e2e/cluster/build.sh (-X main.sourceHash=...) to a hash of this package's
// sources, so that build.sh can tell a stale binary from a current one without a Go toolchain.
var sourceHash = "dev"

// options are the command-line flags.
type options struct {
	kubeconfig    string
	schedulerName string
	qps           float64
	burst         int
	workers       int
	events        bool
	contentType   string
}

// task is one pod to bind and the node it goes to (chosen when the pod was first seen).
type task struct {
	pod  *corev1.Pod
	node string
}

// binder holds the round-robin state, the bind queue and the counters printed on exit.
type binder struct {
	client   kubernetes.Interface
	recorder events.EventRecorder // nil: no events
	nodes    []string
	next     int
	seen     map[types.UID]struct{}
	queue    chan task
	bound    atomic.Int64
	failed   atomic.Int64
	dials    atomic.Int64
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("ceiling-binder", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	fs.StringVar(&o.schedulerName, "scheduler-name", "", "schedulerName of the pods to bind (required)")
	fs.Float64Var(&o.qps, "qps", 5000, "client QPS (client-go's token bucket; <= 0: unlimited)")
	fs.IntVar(&o.burst, "burst", 5000, "client burst")
	fs.IntVar(&o.workers, "workers", 16, "binding goroutines")
	fs.BoolVar(&o.events, "events", false, "write each pod's Scheduled event after its binding")
	fs.StringVar(&o.contentType, "content-type", "application/vnd.kubernetes.protobuf",
		"request content type (kube-scheduler's default is protobuf; application/json for JSON)")
	version := fs.Bool("version", false, "print the source hash and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *version {
		fmt.Printf("ceiling-binder %s\n", sourceHash)
		os.Exit(0)
	}
	if o.kubeconfig == "" || o.schedulerName == "" {
		return o, errors.New("--kubeconfig and --scheduler-name are required")
	}
	if o.workers < 1 {
		return o, errors.New("--workers must be at least 1")
	}
	return o, nil
}

// restConfig loads the kubeconfig with the flags' rate limits and content type, and counts the
// connections its transport dials (with HTTP/2 a handful; one per request would mean no keep-alive).
func (b *binder) restConfig(o options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	if o.qps <= 0 {
		cfg.QPS = -1 // client-go: no rate limiter
	}
	cfg.ContentType = o.contentType
	cfg.AcceptContentTypes = o.contentType + ",application/json"
	cfg.UserAgent = "ceiling-binder"
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		b.dials.Add(1)
		return dialer.DialContext(ctx, network, address)
	}
	return cfg, nil
}

// loadNodes lists the nodes once; the binder never looks at them again.
func (b *binder) loadNodes(ctx context.Context) error {
	list, err := b.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	b.nodes = b.nodes[:0]
	for i := range list.Items {
		b.nodes = append(b.nodes, list.Items[i].Name)
	}
	if len(b.nodes) == 0 {
		return errors.New("no nodes")
	}
	return nil
}

// offer queues a pod that has no node and was not queued before. The informer calls its handlers from
// one goroutine, so seen and next need no lock.
func (b *binder) offer(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return
	}
	if _, dup := b.seen[pod.UID]; dup {
		return
	}
	b.seen[pod.UID] = struct{}{}
	node := b.nodes[b.next%len(b.nodes)]
	b.next++
	b.queue <- task{pod: pod, node: node}
}

// forget drops a pod that left the selector (bound or deleted): it never comes back without a node.
func (b *binder) forget(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		delete(b.seen, pod.UID)
	}
}

// work binds queued pods until the queue is closed.
func (b *binder) work(ctx context.Context) {
	for t := range b.queue {
		if b.bind(ctx, t) && b.recorder != nil {
			b.recorder.Eventf(t.pod, nil, corev1.EventTypeNormal, "Scheduled", "Binding",
				"Successfully assigned %v/%v to %v", t.pod.Namespace, t.pod.Name, t.node)
		}
	}
}

// bind POSTs the Binding, retrying other errors than NotFound and Conflict (the pod is gone or bound
// already) up to five times with a short backoff, as the Python ceiling does.
func (b *binder) bind(ctx context.Context, t task) bool {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.pod.Namespace, Name: t.pod.Name, UID: t.pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: t.node},
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = b.client.CoreV1().Pods(t.pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
		if err == nil {
			b.bound.Add(1)
			return true
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond << attempt)
	}
	b.failed.Add(1)
	fmt.Fprintf(os.Stderr, "ceiling: bind %s/%s failed: %v\n", t.pod.Namespace, t.pod.Name, err)
	return false
}

// watchPods starts the informer over the pods of the scheduler name that have no node.
func (b *binder) watchPods(ctx context.Context, schedulerName string) error {
	selector := fmt.Sprintf("spec.schedulerName=%s,spec.nodeName=", schedulerName)
	lw := cache.NewFilteredListWatchFromClient(b.client.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = selector })
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    b.offer,
		UpdateFunc: func(_, obj interface{}) { b.offer(obj) },
		DeleteFunc: b.forget,
	})
	if err != nil {
		return err
	}
	go informer.Run(ctx.Done())
	return nil
}

// startEvents sets up the events.k8s.io/v1 broadcaster and recorder, as kube-scheduler does.
func (b *binder) startEvents(ctx context.Context, reportingController string) error {
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: b.client.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	b.recorder = broadcaster.NewRecorder(scheme.Scheme, reportingController)
	return nil
}

func run(o options) error {
	b := &binder{seen: map[types.UID]struct{}{}, queue: make(chan task, 4096)}
	cfg, err := b.restConfig(o)
	if err != nil {
		return err
	}
	if b.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if err := b.loadNodes(ctx); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	fmt.Printf("ceiling: %d nodes, scheduler name %s, qps %g/%d\n", len(b.nodes), o.schedulerName, o.qps, o.burst)
	if o.events {
		if err := b.startEvents(ctx, o.schedulerName); err != nil {
			return err
		}
	}
	for i := 0; i < o.workers; i++ {
		go b.work(ctx)
	}
	if err := b.watchPods(ctx, o.schedulerName); err != nil {
		return err
	}
	<-ctx.Done()
	fmt.Printf("ceiling: bound %d, failed %d, connections opened %d\n", b.bound.Load(), b.failed.Load(), b.dials.Load())
	return nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ceiling: %v\n", err)
		os.Exit(1)
	}
}
