package eino

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// Middleware returns the compose.ToolMiddleware that stands between the model
// and the tools, in the store of each call's context (see Values):
//
//   - a call ResolveArguments refused is not run: its tool message is
//     "TOOL was not called: <why>", for every kind of tool;
//   - the result of an invokable or streamable tool is stored with
//     values.SessionValues.Observe and replaced by Observe's Text: the result
//     whole with a line naming its handle, or, past the store's inline limit,
//     a preview and a hint. A streaming result is read to its end first and
//     reaches the model as one chunk;
//   - results of read_value and query_value, of enhanced (multimodal) tools,
//     and errors pass through unchanged (a tool error stops the run, as Eino
//     decides, and an interrupt is an error).
func (a *Adapter) Middleware() compose.ToolMiddleware {
	return compose.ToolMiddleware{
		Invokable:          a.invokable,
		Streamable:         a.streamable,
		EnhancedInvokable:  enhancedInvokable,
		EnhancedStreamable: enhancedStreamable,
	}
}

func (a *Adapter) invokable(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		if why, ok := refusal(in.Arguments); ok {
			return &compose.ToolOutput{Result: notCalledText(in.Name, why)}, nil
		}
		out, err := next(ctx, in)
		if err != nil || out == nil || a.own(in.Name) {
			return out, err
		}
		return &compose.ToolOutput{Result: a.Values(ctx).Observe([]byte(out.Result)).Text}, nil
	}
}

func (a *Adapter) streamable(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		if why, ok := refusal(in.Arguments); ok {
			return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{notCalledText(in.Name, why)})}, nil
		}
		out, err := next(ctx, in)
		if err != nil || out == nil || out.Result == nil || a.own(in.Name) {
			return out, err
		}
		whole, err := concat(out.Result)
		if err != nil {
			return nil, err
		}
		text := a.Values(ctx).Observe([]byte(whole)).Text
		return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{text})}, nil
	}
}

func enhancedInvokable(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
		if why, ok := refusal(in.Arguments); ok {
			return &compose.EnhancedInvokableToolOutput{Result: textResult(notCalledText(in.Name, why))}, nil
		}
		return next(ctx, in)
	}
}

func enhancedStreamable(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
		if why, ok := refusal(in.Arguments); ok {
			res := textResult(notCalledText(in.Name, why))
			return &compose.EnhancedStreamableToolOutput{Result: schema.StreamReaderFromArray([]*schema.ToolResult{res})}, nil
		}
		return next(ctx, in)
	}
}

// notCalledText is the tool message of a refused call, in the proxy's words.
func notCalledText(name, why string) string {
	return name + " was not called: " + why
}

func textResult(text string) *schema.ToolResult {
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text}}}
}

// concat reads sr to its end and closes it.
func concat(sr *schema.StreamReader[string]) (string, error) {
	defer sr.Close()
	var b strings.Builder
	for {
		chunk, err := sr.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		b.WriteString(chunk)
	}
}
