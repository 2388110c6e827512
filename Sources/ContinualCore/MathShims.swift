// Elementary functions without Foundation, so ContinualCore can ship inside an app unchanged.
// They forward to the C library through the standard library's builtins.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(Android)
import Android
#endif

@inline(__always) public func _exp(_ x: Double) -> Double { exp(x) }
@inline(__always) public func _log(_ x: Double) -> Double { log(x) }
@inline(__always) public func _cos(_ x: Double) -> Double { cos(x) }
@inline(__always) public func _sin(_ x: Double) -> Double { sin(x) }
@inline(__always) public func _tanh(_ x: Double) -> Double { tanh(x) }
@inline(__always) public func _log1p(_ x: Double) -> Double { log1p(x) }
@inline(__always) public func _expf(_ x: Float) -> Float { expf(x) }
@inline(__always) public func _tanhf(_ x: Float) -> Float { tanhf(x) }
@inline(__always) public func _log1pf(_ x: Float) -> Float { log1pf(x) }
@inline(__always) public func _logf(_ x: Float) -> Float { logf(x) }
@inline(__always) public func _expm1(_ x: Double) -> Double { expm1(x) }
@inline(__always) public func _lgamma(_ x: Double) -> Double { lgamma(x) }
@inline(__always) public func _erfc(_ x: Double) -> Double { erfc(x) }
