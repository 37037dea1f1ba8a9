// Command demoshop is a tiny shop (home, product pages, "order placed") to
// put behind waitq-guard in demonstrations: compose.yaml runs it as the
// guard's origin. It is not part of a waiting room. Run with -h for its
// settings.
package main

import "github.com/waitq/waitq/internal/app"

func main() { app.Main(&app.DemoShop{}) }
