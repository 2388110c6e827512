// Fuzz target: the results reader behind `inspect` (ResultsReader and the /summary report).
import ContinualExperiments
import Foundation

let resultsPath = NSTemporaryDirectory() + "/fuzz-results-\(getpid()).h5"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    FileManager.default.createFile(atPath: resultsPath, contents: Data(bytes: data, count: size))
    _ = try? ResultsReader.read(path: resultsPath)
    _ = try? SweepReport.read(path: resultsPath)
    return 0
}
