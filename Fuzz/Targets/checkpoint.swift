// Fuzz target: the checkpoint decoder (the byte payload of a checkpoint file, single learner and
// population).
import ContinualCore
import ContinualExperiments
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? TrainerCheckpoint(decoding: bytes)
    _ = try? RunCheckpoint(decoding: bytes)
    return 0
}
