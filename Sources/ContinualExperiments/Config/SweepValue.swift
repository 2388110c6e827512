import Foundation
import ContinualCore

/// One swept key path and the value it was given in a run.
public struct SweepValue: Sendable, Equatable {
    public var path: String
    public var value: JSONValue
    public init(path: String, value: JSONValue) {
        self.path = path
        self.value = value
    }
}
