// Package setting holds what the packages that take settings share: the
// range of values a numeric setting accepts (Range, one statement of its
// bounds for its check and its help), and the error a library package
// returns when a setting of its configuration is refused, so that each
// front end can name the setting as its users know it.
//
// A library is configured with Go structs (engine.Config, tune.Config);
// a command-line tool is configured with flags, a service perhaps with
// the keys of a file. The library's message names the struct's field
// ("engine: Config.Devices 3: need a multiple of the 2 ranks"), and a front
// end that calls it something else renames every field a message names
// with Rename ("engine: --devices 3: need a multiple of the 2 ranks"),
// however deep the error is wrapped. Neither the library nor the front end
// has to parse the other's messages.
package setting
