# -*- Python -*-
# lit configuration of the xent test suite.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "XENT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.xent_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibext", config.shlib_ext))
config.substitutions.append(("%xent_libs", config.xent_libs_dir))
config.substitutions.append(("%xent_src", config.xent_src_root))
config.substitutions.append(("%xent_obj", config.xent_obj_root))
config.substitutions.append(("%mlir_lib_dir", config.mlir_lib_dir))
config.substitutions.append(
    ("%mlir_runner_utils",
     os.path.join(config.mlir_lib_dir, "libmlir_runner_utils" + config.shlib_ext)))
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(config.mlir_lib_dir, "libmlir_c_runner_utils" + config.shlib_ext)))
# The OpenMP runtime that xent-cpu-pipeline's parallel rows call (Debian's
# libomp-22-dev).
config.substitutions.append(
    ("%libomp", os.path.join(config.mlir_lib_dir, "libomp" + config.shlib_ext)))
# The stock mlir-opt of the LLVM installation, for the plugin tests. In a
# sanitizer build XentPlugin.so is instrumented and needs the ASan runtime,
# which the uninstrumented mlir-opt does not link: it is preloaded.
stock_mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
if getattr(config, "xent_sanitizers", False) and config.xent_asan_runtime:
    stock_mlir_opt = "env LD_PRELOAD=%s %s" % (config.xent_asan_runtime, stock_mlir_opt)
config.substitutions.append(("%stock_mlir_opt", stock_mlir_opt))
config.substitutions.append(("%python", config.python_executable))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])

# Sanitizer build (XENT_ENABLE_SANITIZERS, docs/reliability.md): every report
# aborts, so that a report is a failure even under `not` (which only inverts
# a normal non-zero exit), and leaks are reported at exit.
if getattr(config, "xent_sanitizers", False):
    config.available_features.add("sanitizers")
    suppressions = os.path.join(config.xent_src_root, "test", "sanitizers")
    config.environment["ASAN_OPTIONS"] = ":".join([
        # LLVM's inline BumpPtrAllocator (instrumented in xent's code)
        # poisons slabs that the uninstrumented libMLIR.so then allocates
        # from: manual poisoning is off (docs/reliability.md).
        "allow_user_poisoning=0",
        "abort_on_error=1", "detect_leaks=1", "strict_string_checks=1",
        "detect_stack_use_after_return=1", "check_initialization_order=1",
        "handle_abort=0"])
    config.environment["UBSAN_OPTIONS"] = ":".join([
        "print_stacktrace=1", "halt_on_error=1", "abort_on_error=1"])
    config.environment["LSAN_OPTIONS"] = ":".join([
        "suppressions=" + os.path.join(suppressions, "lsan.supp"),
        "print_suppressions=0"])
    config.environment["ASAN_SYMBOLIZER_PATH"] = os.path.join(
        config.llvm_tools_dir, "llvm-symbolizer")
if getattr(config, "xent_fuzzers", False):
    config.available_features.add("fuzzers")
llvm_config.use_default_substitutions()

tool_dirs = [config.xent_tools_dir, config.llvm_tools_dir]
tools = [
    "xent-opt",
    ToolSubst("xent-lsp-server", unresolved="ignore"),
    ToolSubst("xent-reduce", unresolved="ignore"),
    ToolSubst("xent-fuzz-passes", unresolved="ignore"),
    ToolSubst("xent-fuzz-op", unresolved="ignore"),
    ToolSubst("xent-fuzz-recognize", unresolved="ignore"),
    "not",
    "count",
    ToolSubst("mlir-runner", unresolved="ignore"),
    ToolSubst("mlir-translate", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

llvm_config.with_environment("XENT_OPT",
                             os.path.join(config.xent_tools_dir, "xent-opt"))

# The editor and reducer tools (tools/xent-lsp-server, tools/xent-reduce) are
# only built where libMLIR provides their libraries: their tests REQUIRE them.
for tool in ["xent-lsp-server", "xent-reduce"]:
    if os.path.exists(os.path.join(config.xent_tools_dir, tool)):
        config.available_features.add(tool)
if os.path.exists(os.path.join(config.llvm_tools_dir, "mlir-runner")):
    config.available_features.add("mlir-runner")
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# The CUDA runtime (lib/Runtime/CUDA, test/Integration/GPU) is built where
# CMake found the CUDA toolkit: feature "cuda-toolkit"; "cuda-device" where
# the runtime also finds a GPU (the probe loads it: no driver, no device).
cuda_runtime = os.path.join(config.xent_libs_dir, "libxent_cuda_runtime" + config.shlib_ext)
config.substitutions.append(("%cuda_runtime", cuda_runtime))
config.substitutions.append(("%host_cc", config.host_cc))
llvm_config.add_tool_substitutions(
    [ToolSubst("llc", unresolved="ignore"), ToolSubst("llvm-nm", unresolved="ignore")],
    tool_dirs)
if os.path.exists(cuda_runtime):
    import subprocess
    config.available_features.add("cuda-toolkit")
    probe = subprocess.run(
        [config.python_executable, "-c",
         "import ctypes, sys\n"
         "sys.exit(0 if ctypes.CDLL(sys.argv[1]).xentDeviceCount() > 0 else 1)",
         cuda_runtime],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if probe.returncode == 0:
        config.available_features.add("cuda-device")
