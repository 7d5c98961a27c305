// Command pulumi-language-python is this project's Python language host for the Pulumi engine.
//
// Why it exists: Pulumi's own language host lives in the untagged Go module
// github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3. The Go module proxy this
// project builds from serves pkg/v3 and sdk/v3 (v3.274.1 here) but no version of that module, and
// Pulumi's release tarballs come from GitHub, which is out of reach. So this host implements the
// LanguageRuntime gRPC service itself, on Pulumi's own sdk/v3 v3.274.1 packages (gRPC types, the
// Python toolchain resolver, the policy-pack proxy), and runs programs through the same
// `pulumi-language-python-exec` script that a release ships next to the host.
//
// It covers what this project needs: running programs (`pulumi preview/up/destroy/refresh`),
// running policy packs (`--policy-pack`), dependency installation into the project's virtualenv
// and version reporting. Code generation, packing and linking are not implemented.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// execScriptName is the Python entry point that a Pulumi release ships beside the language host.
const execScriptName = "pulumi-language-python-exec"

// exitAfterUserMessage is the exit code the Python SDK uses after it has already printed an
// actionable error; the engine must then stop without adding a second message.
const exitAfterUserMessage = 32

func main() {
	flag.String("tracing", "", "Zipkin-compatible tracing endpoint (accepted for compatibility; unused)")
	showVersion := flag.Bool("version", false, "print the plugin version and exit")
	executor := flag.String("use-executor", "", "path of the exec script (default: next to this binary)")
	flag.Parse()

	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	logging.InitLogging(false, 0, false)

	execScript := *executor
	if execScript == "" {
		self, err := os.Executable()
		if err != nil {
			cmdutil.Exit(fmt.Errorf("cannot locate the language host binary: %w", err))
		}
		execScript = filepath.Join(filepath.Dir(self), execScriptName)
	}
	if _, err := os.Stat(execScript); err != nil {
		cmdutil.Exit(fmt.Errorf("missing %s next to the language host (%w); re-run bin/bootstrap", execScriptName, err))
	}

	var engineAddress string
	if args := flag.Args(); len(args) > 0 {
		engineAddress = args[0]
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cancel := make(chan bool)
	go func() { <-ctx.Done(); close(cancel) }()

	host := newHost(execScript, stop)
	if engineAddress != "" {
		if err := host.attachEngine(ctx, engineAddress); err != nil {
			cmdutil.Exit(err)
		}
	}

	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, host)
			return nil
		},
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("could not start the language host's gRPC server: %w", err))
	}
	// The engine reads the port from our first line of stdout.
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host stopped serving: %w", err))
	}
}

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	execScript    string
	engineAddress string
	// stopServing ends the gRPC server and with it this process.
	stopServing context.CancelFunc
	// runCtx is cancelled by the engine's Cancel RPC and stops a running program.
	runCtx    context.Context
	runCancel context.CancelFunc
}

func newHost(execScript string, stopServing context.CancelFunc) *host {
	ctx, cancel := context.WithCancel(context.Background())
	return &host{execScript: execScript, runCtx: ctx, runCancel: cancel, stopServing: stopServing}
}

// engineCheckInterval is how often the host asks the engine whether it is still there. A
// `pulumi` killed outright (SIGKILL, OOM) cannot stop its plugins; at Pulumi's own 5 minutes an
// orphaned host outlived it that long, so it is checked every 2 s and the host exits within 4.
const engineCheckInterval = 2 * time.Second

// attachEngine remembers the engine and stops serving, which exits this process, when the
// engine goes away.
func (h *host) attachEngine(ctx context.Context, address string) error {
	if address == "" || address == h.engineAddress {
		return nil
	}
	h.engineAddress = address
	if err := rpcutil.Healthcheck(ctx, address, engineCheckInterval, h.stopServing); err != nil {
		return fmt.Errorf("could not start the engine health check: %w", err)
	}
	return nil
}

func (h *host) Handshake(
	ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	if err := h.attachEngine(context.Background(), req.EngineAddress); err != nil {
		return nil, err
	}
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

// GetRequiredPackages reports no packages: resource plugins this project uses are installed by
// bin/bootstrap, and the engine loads the others it meets on demand.
func (h *host) GetRequiredPackages(
	context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{Packages: []*pulumirpc.PackageDependency{}}, nil
}

func (h *host) GetProgramDependencies(
	context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.runCancel()
	return &emptypb.Empty{}, nil
}

// pythonOptions reads the `runtime.options` of Pulumi.yaml / PulumiPolicy.yaml.
func pythonOptions(info *pulumirpc.ProgramInfo, defaultVenv string) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{Root: info.RootDirectory, ProgramDir: info.ProgramDirectory}
	raw := info.GetOptions().AsMap()
	if v, ok := raw["virtualenv"]; ok {
		s, isString := v.(string)
		if !isString {
			return opts, errors.New("runtime option `virtualenv` must be a string path")
		}
		opts.Virtualenv = s
	}
	if v, ok := raw["toolchain"]; ok {
		switch v {
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "uv":
			opts.Toolchain = toolchain.Uv
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		default:
			return opts, fmt.Errorf("runtime option `toolchain` must be pip, uv or poetry, not %v", v)
		}
	}
	if opts.Virtualenv == "" {
		opts.Virtualenv = defaultVenv
	}
	return opts, nil
}

func (h *host) InstallDependencies(
	req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	opts, err := pythonOptions(req.Info, "")
	if err != nil {
		return err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.IsTerminal)
	if err != nil {
		return err
	}
	defer closer.Close()
	return tc.InstallDependencies(server.Context(), req.Info.RootDirectory, req.UseLanguageVersionTools,
		true, stdout, stderr)
}

// Run executes the Pulumi program: `<venv python> pulumi-language-python-exec --monitor ... <entry>`.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	opts, err := pythonOptions(req.Info, "")
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, fmt.Errorf("%w (run bin/bootstrap to create the project's virtualenv)", err)
	}

	args := []string{h.execScript}
	flagArg := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagArg("monitor", req.GetMonitorAddress())
	flagArg("engine", h.engineAddress)
	flagArg("project", req.GetProject())
	flagArg("root_directory", req.GetInfo().GetRootDirectory())
	flagArg("stack", req.GetStack())
	flagArg("pwd", req.GetPwd())
	flagArg("dry_run", strconv.FormatBool(req.GetDryRun()))
	flagArg("parallel", strconv.Itoa(int(req.GetParallel())))
	flagArg("organization", req.GetOrganization())
	args = append(args, req.Info.EntryPoint)
	args = append(args, req.GetArgs()...)

	runCtx, stop := context.WithCancel(h.runCtx)
	defer stop()
	context.AfterFunc(ctx, stop)
	cmd, err := tc.Command(runCtx, args...)
	if err != nil {
		return nil, err
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr

	stackConfig := req.GetConfig()
	if stackConfig == nil {
		stackConfig = map[string]string{} // the exec script iterates it; JSON null would crash it
	}
	config, err := json.Marshal(stackConfig)
	if err != nil {
		return nil, fmt.Errorf("serialising stack configuration: %w", err)
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secretKeysJSON, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("serialising secret configuration keys: %w", err)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeysJSON))

	if err := cmd.Run(); err != nil {
		_ = os.Stdout.Sync()
		_ = os.Stderr.Sync()
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not start the Python program: %v", err)}, nil
		}
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.ExitStatus() == exitAfterUserMessage {
			return &pulumirpc.RunResponse{Bail: true}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with %v", exitErr)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin starts plugins written in Python. Policy packs (kind "analyzer") run as
// `python -u -m pulumi.policy <engine> <pack dir>` in the pack directory, with the stack's
// configuration exported through Pulumi's policy proxy, as a Pulumi release does.
func (h *host) RunPlugin(
	req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	ctx := server.Context()
	isPolicyPack := req.Kind == string(apitype.AnalyzerPlugin)
	defaultVenv := "venv"
	if isPolicyPack {
		defaultVenv = ""
	}
	opts, err := pythonOptions(req.Info, defaultVenv)
	if err != nil {
		return err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}

	var args []string
	if isPolicyPack {
		args = append([]string{"-u", "-m", "pulumi.policy"}, req.Args...)
		args = append(args, req.Info.ProgramDirectory)
	} else {
		args = append([]string{req.Info.ProgramDirectory}, req.Args...)
	}
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()

	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	var proxy *sdk.PolicyProxy
	if isPolicyPack {
		cmd.Dir = req.Info.ProgramDirectory
		proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout)
		if err != nil {
			return fmt.Errorf("could not start the policy pack proxy: %w", err)
		}
		stackConfig, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("could not read the stack configuration for the policy pack: %w", err)
		}
		if stackConfig != nil {
			setEnv := func(k, v string) {
				if v != "" {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			setEnv("PULUMI_ORGANIZATION", stackConfig.Organization)
			setEnv("PULUMI_PROJECT", stackConfig.Project)
			setEnv("PULUMI_STACK", stackConfig.Stack)
			setEnv("PULUMI_DRY_RUN", strconv.FormatBool(stackConfig.DryRun))
			if stackConfig.Config != nil {
				configJSON, err := json.Marshal(stackConfig.Config)
				if err != nil {
					return fmt.Errorf("serialising stack configuration: %w", err)
				}
				setEnv("PULUMI_CONFIG", string(configJSON))
			}
		}
	} else {
		cmd.Dir = req.Pwd
	}
	cmd.Env = append(cmd.Env, req.Env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("could not start the Python plugin: %w", err)
		if proxy != nil {
			// The engine may already be waiting on the proxy for the pack's analyzer calls; without
			// this they would block forever instead of failing with this error.
			proxy.Abort(err)
		}
		return err
	}
	if proxy != nil {
		// The proxy now forwards the engine's analyzer calls to the started pack.
		if err := proxy.Attach(ctx, cmd); err != nil {
			return fmt.Errorf("could not attach the policy pack: %w", err)
		}
		return closer.Close()
	}
	if err := cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
				return server.Send(&pulumirpc.RunPluginResponse{
					Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(ws.ExitStatus())}, //nolint:gosec
				})
			}
		}
		return fmt.Errorf("python plugin failed: %w", err)
	}
	return closer.Close()
}
