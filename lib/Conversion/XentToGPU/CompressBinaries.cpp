//===- CompressBinaries.cpp - Cubins as compressed fatbins -----------------===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//
//
// xent-compress-gpu-binaries: each cubin of a gpu.binary becomes a fatbin
// holding it compressed (fatbinary --compress-all), which cuModuleLoadData
// loads as it is.
//
//===----------------------------------------------------------------------===//

#include "xent/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <optional>
#include <string>

namespace mlir::xent {
#define GEN_PASS_DEF_XENTCOMPRESSGPUBINARIES
#include "xent/Conversion/Passes.h.inc"
} // namespace mlir::xent

using namespace mlir;

/// `fatbinary` of the CUDA toolkit: under $CUDA_ROOT, $CUDA_HOME or
/// $CUDA_PATH, on PATH, or in /usr/local/cuda (where MLIR's NVVM target
/// looks for ptxas too).
static std::optional<std::string> findFatbinary() {
  for (const char *var : {"CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"}) {
    const char *root = std::getenv(var);
    if (!root || !*root)
      continue;
    SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", "fatbinary");
    if (llvm::sys::fs::can_execute(path))
      return path.str().str();
  }
  if (auto found = llvm::sys::findProgramByName("fatbinary"))
    return *found;
  if (llvm::sys::fs::can_execute("/usr/local/cuda/bin/fatbinary"))
    return std::string("/usr/local/cuda/bin/fatbinary");
  return std::nullopt;
}

/// The fatbin holding `cubin` (for `chip`, e.g. sm_90a) compressed, or a
/// diagnostic on `op`.
static FailureOr<std::string> compress(Operation *op, StringRef tool,
                                       StringRef chip, StringRef cubin,
                                       StringRef mode) {
  SmallString<128> input, output, log;
  if (llvm::sys::fs::createTemporaryFile("xent-kernels", "cubin", input) ||
      llvm::sys::fs::createTemporaryFile("xent-kernels", "fatbin", output) ||
      llvm::sys::fs::createTemporaryFile("xent-kernels", "log", log))
    return op->emitError("cannot create a temporary file for fatbinary");
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(input);
    llvm::sys::fs::remove(output);
    llvm::sys::fs::remove(log);
  });
  {
    std::error_code error;
    llvm::raw_fd_ostream os(input, error);
    if (error)
      return op->emitError("cannot write ") << input << ": " << error.message();
    os << cubin;
  }
  StringRef arch = chip;
  arch.consume_front("sm_");
  std::string image = ("--image3=kind=elf,sm=" + arch + ",file=" + input).str();
  std::string create = ("--create=" + output).str();
  std::string compressMode = ("--compress-mode=" + mode).str();
  SmallVector<StringRef> args = {tool, "-64", "--compress-all", compressMode,
                                 create, image};
  std::string message;
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  int rc = llvm::sys::ExecuteAndWait(tool, args, /*Env=*/std::nullopt,
                                     redirects, /*SecondsToWait=*/0,
                                     /*MemoryLimit=*/0, &message);
  if (rc != 0) {
    InFlightDiagnostic diag = op->emitError("fatbinary failed (exit ")
                              << rc << (message.empty() ? "" : ": ")
                              << message << ")";
    if (auto text = llvm::MemoryBuffer::getFile(log, /*IsText=*/true))
      diag << ": " << StringRef((*text)->getBuffer()).trim();
    return diag;
  }
  auto buffer = llvm::MemoryBuffer::getFile(output, /*IsText=*/false);
  if (!buffer)
    return op->emitError("cannot read fatbinary's output ")
           << output << ": " << buffer.getError().message();
  return (*buffer)->getBuffer().str();
}

namespace {
struct XentCompressGPUBinariesPass
    : public xent::impl::XentCompressGPUBinariesBase<
          XentCompressGPUBinariesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (!llvm::is_contained({"default", "size", "speed", "balance"}, mode)) {
      getOperation()->emitError("xent-compress-gpu-binaries: mode must be "
                                "default, size, speed or balance, got '")
          << mode << "'";
      return signalPassFailure();
    }
    std::optional<std::string> tool;
    WalkResult result = getOperation()->walk([&](gpu::BinaryOp binary) {
      SmallVector<Attribute> objects;
      bool changed = false;
      for (Attribute attr : binary.getObjectsAttr()) {
        auto object = dyn_cast<gpu::ObjectAttr>(attr);
        auto target =
            object ? dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget())
                   : NVVM::NVVMTargetAttr();
        if (!target || object.getFormat() != gpu::CompilationTarget::Binary) {
          objects.push_back(attr);
          continue;
        }
        if (!tool && !(tool = findFatbinary())) {
          binary.emitError("fatbinary (CUDA toolkit) not found under "
                           "$CUDA_ROOT, $CUDA_HOME, $CUDA_PATH, PATH or "
                           "/usr/local/cuda; compile with compress=false "
                           "to keep the cubins");
          return WalkResult::interrupt();
        }
        FailureOr<std::string> fatbin =
            compress(binary, *tool, target.getChip(),
                     object.getObject().getValue(), mode);
        if (failed(fatbin))
          return WalkResult::interrupt();
        objects.push_back(gpu::ObjectAttr::get(
            &getContext(), target, gpu::CompilationTarget::Fatbin,
            StringAttr::get(&getContext(), *fatbin), object.getProperties(),
            object.getKernels()));
        changed = true;
      }
      if (changed)
        binary.setObjectsAttr(ArrayAttr::get(&getContext(), objects));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
