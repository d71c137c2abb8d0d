//===- BufferizableOpInterfaceImpl.h - xent bufferization -------*- C++ -*-===//
//
// Part of the xent project.
//
//===----------------------------------------------------------------------===//

#ifndef XENT_DIALECT_XENT_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
#define XENT_DIALECT_XENT_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace xent {
/// Attaches `BufferizableOpInterface` to `xent.launch`, so that one-shot
/// bufferization decides where its results are written.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace xent
} // namespace mlir

#endif // XENT_DIALECT_XENT_TRANSFORMS_BUFFERIZABLEOPINTERFACEIMPL_H
