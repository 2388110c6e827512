// Fuzz target: the protobuf reader and the ONNX weight reader behind `init_from: {"onnx": …}`
// (bytes from a file the user names; they must give an error, never a crash).
import ContinualExport
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let fields = try? ProtobufReader.fields(of: bytes) {
        for f in fields {
            _ = try? f.message()
            _ = try? f.floats()
            _ = try? f.ints()
        }
    }
    _ = try? ONNXWeights(onnx: bytes)
    return 0
}
