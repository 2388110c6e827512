// Fuzz target: the CSV scenario reader (bytes → ExperienceStream).
import ContinualExperiments
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? CSVScenarioReader().parse(bytes: bytes, path: "fuzz.csv")
    return 0
}
