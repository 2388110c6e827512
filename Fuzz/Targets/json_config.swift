// Fuzz target: the experiment-file JSON decoder (ExperimentFile.parse: syntax, duplicate keys,
// strict typed decode, sweep expansion).
import ContinualExperiments
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = try? ExperimentFile.parse(data: Data(bytes: data, count: size), path: "fuzz.json")
    return 0
}
